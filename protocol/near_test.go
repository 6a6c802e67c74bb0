package protocol

import (
	"strings"
	"testing"
)

func TestNearNames(t *testing.T) {
	names := []string{"ArrowLeft", "ArrowRight", "Space", "NumpadEnter", "Enter", "KeyA", "move_left", "attack"}
	for q, want := range map[string]string{
		"Spcae":        "Space",
		"arrowleft":    "ArrowLeft",
		"Numpad_Enter": "NumpadEnter Enter",
		"Spacebar":     "Space",
		"atack":        "attack",
		"move-left":    "move_left",
		"jump":         "",
		"Space":        "",
	} {
		if got := strings.Join(NearNames(q, names, 3), " "); got != want {
			t.Errorf("%q: %q, want %q", q, got, want)
		}
	}
}

// TestUnknownActionHint: an unknown action's error names the nearest
// actions, and lists them all only when they are few.
func TestUnknownActionHint(t *testing.T) {
	few := []Action{{Name: "attack", Kind: ActionButton}, {Name: "dodge", Kind: ActionButton}}
	on := true
	err := CheckActionInput("actions[0]", ActionInput{Name: "atack", Pressed: &on}, few)
	if err == nil || !strings.Contains(err.Error(), `unknown action "atack" (did you mean attack?); the game's actions are [attack dodge]`) {
		t.Fatalf("few: %v", err)
	}
	var many []Action
	for _, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZ" {
		many = append(many, Action{Name: "Key" + string(c), Kind: ActionButton})
	}
	err = CheckActionInput("actions[0]", ActionInput{Name: "Keya", Pressed: &on}, many)
	if err == nil || !strings.Contains(err.Error(), `(did you mean KeyA`) || !strings.Contains(err.Error(), "the game has 26 actions") || strings.Contains(err.Error(), "KeyZ") {
		t.Fatalf("many: %v", err)
	}
}
