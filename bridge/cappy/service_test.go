package cappy

import (
	"context"
	"encoding/json"
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
	if mode == "play" {
		return playGame(ctx, ws)
	}
	token, caps, proto := os.Getenv("CAPPY_SESSION_TOKEN"), `["scenarios"]`, `{"min":1,"max":1}`
	switch mode {
	case "wrong-token":
		token += "x"
	case "old-protocol", "explain":
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
	if mode == "explain" { // refused, it says why in its log a moment later, and exits
		time.Sleep(20 * time.Millisecond)
		fmt.Fprintln(os.Stderr, "cappy: this game's adapter is too new for this crosscode-mcp: update crosscode-mcp")
	}
	return 1
}

// playGame is a game that records and replays (nothing): its hello has
// the capabilities in CAPPY_TEST_CAPS; it logs its seed and the welcome,
// and plays operations until the connection ends.
func playGame(ctx context.Context, ws *websocket.Conn) int {
	fmt.Fprintf(os.Stderr, "launched with seed=%s\n", os.Getenv(protocol.SeedEnv))
	name := os.Getenv("CAPPY_TEST_ADAPTER")
	if name == "" {
		name = "test-game"
	}
	hello := fmt.Sprintf(`{"type":"hello","protocol":{"min":1,"max":1},"token":%q,"adapter":{"name":%q},"game":{"id":"g"},"capabilities":%s}`,
		os.Getenv("CAPPY_SESSION_TOKEN"), name, os.Getenv("CAPPY_TEST_CAPS"))
	ws.Write(ctx, websocket.MessageText, []byte(hello))
	ws.Write(ctx, websocket.MessageText, []byte(`{"type":"scenarios","scenarios":[]}`))
	for {
		_, b, err := ws.Read(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, "connection ended:", err)
			return 0
		}
		typ, m, err := protocol.DecodeControllerMessage(b)
		if err != nil {
			continue
		}
		send := func(format string, args ...any) {
			ws.Write(context.Background(), websocket.MessageText, fmt.Appendf(nil, format, args...))
		}
		switch v := m.(type) {
		case *protocol.Welcome:
			fmt.Fprintf(os.Stderr, "welcome: %s\n", b)
		case *protocol.Ping:
			send(`{"type":"pong","nonce":%q}`, v.Nonce)
		case *protocol.RecordStart:
			fmt.Fprintf(os.Stderr, "record_start: %s\n", b)
			send(`{"type":"started","op":%q}`, v.Op)
		case *protocol.PrepareReplay:
			send(`{"type":"ready","op":%q}`, v.Op)
		case *protocol.OpMessage:
			switch typ {
			case "start":
				send(`{"type":"started","op":%q}`, v.Op)
				send(`{"type":"completed","op":%q}`, v.Op)
			case "stop":
				r, _ := json.Marshal(protocol.NewInlineReplay([]byte(`{"steps":[]}`), "test"))
				send(`{"type":"completed","op":%q,"replay":%s}`, v.Op, r)
			}
		}
	}
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
		// What a refused game says on its way out reaches the message too.
		{"explain", protocol.CappyVersionIncompatible, "too new for this crosscode-mcp: update crosscode-mcp", nil},
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

// record runs a recording on s's game to its end.
func record(t *testing.T, s *Service) {
	t.Helper()
	ctx := context.Background()
	op, err := s.Controller.Start(ctx, Request{Kind: KindRecording})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the recording runs", func() bool { return op.Status().Status == StatusRunning })
	if err := s.Controller.Stop(ctx, op); err != nil {
		t.Fatal(err)
	}
	if out := op.Wait(ctx); out.Status != StatusCompleted {
		t.Fatalf("recording: %+v", out)
	}
}

// TestFreshProcessForEachRecording: a game that does not reset itself gets
// a new process, launched with the seed, for each recording and replay
// once an operation ran in its process or it was launched for another
// seed; one that resets itself keeps its process. The config's events
// reach, in welcome, an adapter that takes them, and no other.
func TestFreshProcessForEachRecording(t *testing.T) {
	ctx := context.Background()
	events := map[string]string{"Player:died": "DIED", ".:won": "WON"}
	s := testService(t, "play", &CaptureConfig{Events: events})
	l := s.Launcher.(*Launcher)
	l.Env["CAPPY_TEST_CAPS"] = `["freeform_recording","replay","seed","config_events"]`
	starts := func() int { return l.Info().Starts }
	if _, err := s.EnsureFresh(ctx, 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the welcome in the log", func() bool { return strings.Contains(l.Tail(8<<10), "welcome:") })
	if log := l.Tail(8 << 10); !strings.Contains(log, `"events":{".:won":"WON","Player:died":"DIED"}`) || !strings.Contains(log, "seed=1") {
		t.Fatalf("the game's log: %s", log)
	}
	if _, err := s.EnsureFresh(ctx, 1); err != nil || starts() != 1 {
		t.Fatalf("a game as it launched was launched again (%v, %d starts)", err, starts())
	}
	record(t, s)
	if _, err := s.EnsureFresh(ctx, 1); err != nil || starts() != 2 {
		t.Fatalf("after a recording: %v, %d starts; expected a new process", err, starts())
	}
	if _, err := s.EnsureFresh(ctx, 5); err != nil || starts() != 3 {
		t.Fatalf("for another seed: %v, %d starts; expected a new process", err, starts())
	}
	eventually(t, "the third launch's log", func() bool { return strings.Contains(l.Tail(2<<10), "seed=5") })
	if a := s.Controller.Connected(); a == nil || a.Operations != 0 {
		t.Fatalf("the new game: %+v", a)
	}

	// A game that resets itself, and takes no events: one process.
	s2 := testService(t, "play", &CaptureConfig{Events: events})
	l2 := s2.Launcher.(*Launcher)
	l2.Env["CAPPY_TEST_CAPS"] = `["freeform_recording","replay","resets_itself"]`
	if _, err := s2.EnsureFresh(ctx, 1); err != nil {
		t.Fatal(err)
	}
	record(t, s2)
	for _, seed := range []int64{1, 9} {
		if _, err := s2.EnsureFresh(ctx, seed); err != nil || l2.Info().Starts != 1 {
			t.Fatalf("a game that resets itself was launched again (seed %d: %v, %d starts)", seed, err, l2.Info().Starts)
		}
	}
	eventually(t, "the welcome in the log", func() bool { return strings.Contains(l2.Tail(8<<10), "welcome:") })
	if log := l2.Tail(8 << 10); strings.Contains(log, "events") {
		t.Fatalf("events reached an adapter without %s: %s", protocol.CapConfigEvents, log)
	}
}
