package agentclients

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// TestMain builds the crosscode-mcp binary the clients start, once
// (not under Wine, where the clients do not run: NewWorld skips).
func TestMain(m *testing.M) {
	if sysdeps.UnderWine() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "agentclients-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := BuildBinary(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestPlay plays the standard play (play.go) in every client.
func TestPlay(t *testing.T) {
	if len(clients) == 0 {
		t.Fatal("no client is defined")
	}
	for _, c := range clients {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel() // each client in a world of its own
			w := NewWorld(t)
			other := w.Agent(t, OtherActor, "codex")
			CallTool(t, other, "claim", map[string]any{"patterns": []string{"src/boss.go"}, "reason": "rework the boss fight"})
			p := &Play{}
			w.Model = NewModel(t, c.Mount, p.Script)
			c.Configure(t, w)
			res := c.Run(t, w, Prompt)
			p.Check(t, c, w, w.Model, res)
			for _, tk := range p.Tokens() {
				t.Logf("tokens: %s %s: %d text bytes, %d images, %d tokens", c.Name, tk.Tool, tk.TextBytes, tk.Images, tk.Tokens)
			}
		})
	}
}

// TestLongScenario plays the long play (play.go) in every client.
func TestLongScenario(t *testing.T) {
	if len(clients) == 0 {
		t.Fatal("no client is defined")
	}
	for _, c := range clients {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel() // most of the long play is waiting for the game
			w := NewWorld(t, "-pace", strconv.FormatFloat(LongPace, 'f', -1, 64))
			p := &LongPlay{}
			w.Model = NewModel(t, c.Mount, p.Script)
			c.Configure(t, w)
			p.Check(t, c, c.Run(t, w, "Run the long boss fight and follow it to the end."))
		})
	}
}

// TestWaitForClaim: in every client, the model claims a file another
// agent holds with waitSeconds, and the same call answers granted when
// the other releases (issue 24).
func TestWaitForClaim(t *testing.T) {
	if len(clients) == 0 {
		t.Fatal("no client is defined")
	}
	for _, c := range clients {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel() // each client in a world of its own
			w := NewWorld(t)
			other := w.Agent(t, OtherActor, "codex")
			CallTool(t, other, "claim", map[string]any{"patterns": []string{"src/boss.go"}, "reason": "rework the boss fight"})
			p := &WaitPlay{}
			w.Model = NewModel(t, c.Mount, p.Script)
			c.Configure(t, w)
			released := make(chan error, 1)
			go func() { released <- p.Release(other) }()
			res := c.Run(t, w, WaitPrompt)
			if err := <-released; err != nil {
				t.Errorf("releasing the held file: %v", err)
			}
			p.Check(t, c, w.Model, res)
		})
	}
}
