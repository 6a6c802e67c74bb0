package cappy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// TestMain lets the test binary play a game that the service launches:
// with CAPPY_TEST_GAME set it is that game, not the tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("CAPPY_TEST_GAME"); mode != "" {
		os.Exit(testGame(mode))
	}
	os.Exit(m.Run())
}

// testGame is a game whose adapter says hello as mode says, prints what
// the controller answered, and exits.
func testGame(mode string) int {
	fmt.Fprintln(os.Stderr, "test game starting:", mode)
	if mode == "sleep" { // a game that never connects
		time.Sleep(time.Hour)
		return 0
	}
	if mode == "exit" {
		fmt.Fprintln(os.Stderr, "fatal: could not load level 1")
		return 3
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, os.Getenv("CAPPY_ENDPOINT"), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dial:", err)
		return 1
	}
	defer ws.CloseNow()
	token, caps, proto := os.Getenv("CAPPY_SESSION_TOKEN"), `["scenarios"]`, `{"min":1,"max":1}`
	switch mode {
	case "wrong-token":
		token += "x"
	case "old-protocol":
		proto = `{"min":7,"max":9}`
	}
	hello := fmt.Sprintf(`{"type":"hello","protocol":%s,"token":%q,"adapter":{"name":"test-game"},"game":{"id":"g"},"capabilities":%s}`, proto, token, caps)
	if err := ws.Write(ctx, websocket.MessageText, []byte(hello)); err != nil {
		return 1
	}
	_, answer, err := ws.Read(ctx)
	fmt.Fprintf(os.Stderr, "controller answered: %s (%v)\n", answer, err)
	if mode == "linger" {
		time.Sleep(time.Minute) // refused, but the process stays
	}
	return 1
}

func testService(t *testing.T, mode string, cfg *CaptureConfig) *Service {
	t.Helper()
	s, err := NewService(context.Background(), ServiceConfig{Data: t.TempDir(), Config: cfg, GameCommand: []string{os.Args[0]}, GameDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.Launcher.(*Launcher).Env = map[string]string{"CAPPY_TEST_GAME": mode}
	return s
}

// A game that cannot connect is reported at once, with the controller's
// reason and the end of the game's log, not after the launch timeout.
func TestEnsureAdapterGivesUpAtOnce(t *testing.T) {
	cases := []struct {
		mode, code, says string
		cfg              *CaptureConfig
	}{
		{"exit", protocol.CappyAdapterDisconnected, "fatal: could not load level 1", nil},
		{"wrong-token", protocol.CappyUnauthenticated, "wrong session token", nil},
		{"old-protocol", protocol.CappyVersionIncompatible, "the controller speaks protocol 1", nil},
		{"missing-capability", protocol.CappyCapabilityMissing, `requires capability "teleport"`, &CaptureConfig{RequiredCapabilities: []string{"teleport"}}},
		{"linger", protocol.CappyCapabilityMissing, `requires capability "teleport"`, &CaptureConfig{RequiredCapabilities: []string{"teleport"}}},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			s := testService(t, tc.mode, tc.cfg)
			begin := time.Now()
			_, err := s.EnsureAdapter(context.Background())
			took := time.Since(begin)
			var ce *Error
			if !errors.As(err, &ce) || ce.Code != tc.code {
				t.Fatalf("EnsureAdapter: %v, want code %s", err, tc.code)
			}
			if !strings.Contains(ce.Message, tc.says) || !strings.Contains(ce.Message, "test game starting") {
				t.Fatalf("message %q: want the reason (%q) and the end of the game's log", ce.Message, tc.says)
			}
			if strings.Contains(ce.Message, "did not connect within") {
				t.Fatalf("gave up only at the launch timeout: %s", ce.Message)
			}
			t.Logf("answered in %s", took) // no assertion on time: the cause above says it did not wait
		})
	}
}

// A refusal from before this launch does not fail the next one.
func TestEnsureAdapterIgnoresEarlierRejections(t *testing.T) {
	s := testService(t, "wrong-token", nil)
	if _, err := s.EnsureAdapter(context.Background()); err == nil {
		t.Fatal("a wrong token connected")
	}
	eventually(t, "the refused game exits", func() bool { return !s.Launcher.Running() })
	s.Launcher.(*Launcher).Env = map[string]string{"CAPPY_TEST_GAME": "exit"}
	_, err := s.EnsureAdapter(context.Background())
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != protocol.CappyAdapterDisconnected || !strings.Contains(ce.Message, "exited before its handshake") {
		t.Fatalf("second launch: %v, want the exit, not the earlier refusal", err)
	}
	if _, err := os.Stat(filepath.Dir(s.Launcher.Info().LogPath)); err != nil {
		t.Fatal(err)
	}
}
