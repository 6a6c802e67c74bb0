package cappy

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/internal/testing/webgames"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// keyEvent is a key event as internal/testing/webgames/keys saw it.
type keyEvent struct {
	Type, Code, Key        string
	KeyCode, Location      int64
	Shift, Ctrl, Alt, Meta bool
	CharCode               int64
}

// pageKeyEvents reads and clears what the keys page saw.
func pageKeyEvents(t *testing.T, s *Service) []keyEvent {
	t.Helper()
	ans, err := s.Controller.Inspect(context.Background(), "text")
	if err != nil || ans.Error != nil {
		t.Fatalf("inspect: %v %+v", err, ans)
	}
	var st struct{ Events []keyEvent }
	if err := json.Unmarshal(ans.Value, &st); err != nil {
		t.Fatal(err)
	}
	return st.Events
}

// TestPageDriverKeys: every key the page driver offers reaches a page in
// real Chromium as the keyboard's would: its code, key, keyCode and
// location (left, right, numpad), a keypress with its character for a
// key that types one, and the modifiers held (Shift's key is the shifted
// one; Control makes a shortcut, which types nothing).
func TestPageDriverKeys(t *testing.T) {
	sysdeps.Need(t, "chromium")
	cfg := &CaptureConfig{Game: &GameConfig{Serve: webgames.Dir(t, "keys"), Adapter: AdapterPage}}
	s, err := NewService(context.Background(), ServiceConfig{Data: t.TempDir(), Config: cfg, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	op := pageRecording(t, s, 1)
	if got, want := len(s.Controller.Actions()), len(pageKeyList())+1; got != want {
		t.Fatalf("%d actions, want every key and the pointer: %d", got, want)
	}
	step(t, s, op, 0)
	pageKeyEvents(t, s)
	// Each key goes down and up, 32 keys a step (few steps: a loaded
	// machine's browser may be slow to answer any of them).
	keys := pageKeyList()
	for len(keys) > 0 {
		batch := keys[:min(32, len(keys))]
		keys = keys[len(batch):]
		var in []protocol.ActionInput
		var want []keyEvent
		for _, k := range batch {
			in = append(in, key(k.Code, true), key(k.Code, false))
			down := keyEvent{Type: "keydown", Code: k.Code, Key: k.Key, KeyCode: k.KeyCode, Location: k.Location}
			// A modifier's own keydown carries it.
			switch k.Key {
			case "Shift":
				down.Shift = true
			case "Control":
				down.Ctrl = true
			case "Alt":
				down.Alt = true
			case "Meta":
				down.Meta = true
			}
			want = append(want, down)
			if k.Types {
				char := []rune(k.Key)[0]
				if k.Key == "Enter" {
					char = '\r'
				}
				want = append(want, keyEvent{Type: "keypress", Code: k.Code, Key: k.Key, KeyCode: int64(char), Location: k.Location, CharCode: int64(char)})
			}
			want = append(want, keyEvent{Type: "keyup", Code: k.Code, Key: k.Key, KeyCode: k.KeyCode, Location: k.Location})
		}
		step(t, s, op, 0, in...)
		got := pageKeyEvents(t, s)
		for i := range max(len(got), len(want)) {
			if i >= len(got) || i >= len(want) || got[i] != want[i] {
				t.Errorf("key event %d of %s..%s:\n got %+v\nwant %+v", i, batch[0].Code, batch[len(batch)-1].Code, keyAt(got, i), keyAt(want, i))
				break
			}
		}
	}
	step(t, s, op, 0, key("ShiftLeft", true), key("KeyA", true), key("KeyA", false), key("Digit1", true), key("Digit1", false), key("ShiftLeft", false))
	evs := pageKeyEvents(t, s)
	if len(evs) != 8 || evs[1].Key != "A" || !evs[1].Shift || evs[2].Type != "keypress" || evs[2].CharCode != 'A' || evs[4].Key != "!" || evs[5].CharCode != '!' {
		t.Errorf("Shift held: %+v", evs)
	}
	step(t, s, op, 0, key("ControlRight", true), key("KeyS", true), key("KeyS", false), key("ControlRight", false))
	evs = pageKeyEvents(t, s)
	if len(evs) != 4 || evs[1].Key != "s" || !evs[1].Ctrl || evs[2].Type != "keyup" {
		t.Errorf("Control held: %+v", evs)
	}
	if st := op.Status(); st.Status != StatusRunning {
		t.Fatalf("the recording after every key: %+v", st)
	}
}

func keyAt(evs []keyEvent, i int) any {
	if i < len(evs) {
		return evs[i]
	}
	return "nothing"
}
