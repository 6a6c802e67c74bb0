package coord

import (
	"strings"
	"testing"
)

// TestReleaseDeniedClaimAnswers: release_claim of a denied claim is not an
// error (the tool is idempotent: the claim already holds nothing); the
// result says when it was denied and who held the paths.
func TestReleaseDeniedClaimAnswers(t *testing.T) {
	w := newWorld(t)
	ada, bo := w.coord(t, "ada"), w.coord(t, "bo")
	held := call(t, ada, "claim", map[string]any{"patterns": []string{"src/**"}})
	denied := call(t, bo, "claim", map[string]any{"patterns": []string{"src/x.go"}})
	if denied["status"] != "denied" {
		t.Fatalf("%v", denied)
	}
	out := call(t, bo, "release_claim", map[string]any{"claimIds": []string{denied["claimId"].(string)}})
	if rel := out["released"].([]any); len(rel) != 0 {
		t.Fatalf("released %v", rel)
	}
	un := out["unchanged"].([]any)
	if len(un) != 1 {
		t.Fatalf("unchanged: %v", out)
	}
	u := un[0].(map[string]any)
	note, _ := u["note"].(string)
	if u["status"] != "denied" || u["at"] == "" || !strings.Contains(note, "denied at") || !strings.Contains(note, "ada held src/**") ||
		!strings.Contains(note, held["claimId"].(string)) || !strings.Contains(note, "nothing to release") || out["next"] != note {
		t.Fatalf("unchanged: %v", u)
	}
	if h := u["heldBy"].([]any); len(h) != 1 || h[0].(map[string]any)["claimId"] != held["claimId"] {
		t.Fatalf("heldBy: %v", u["heldBy"])
	}
	// Released twice: the second answer says so, not an error.
	call(t, ada, "release_claim", map[string]any{"claimIds": []string{held["claimId"].(string)}})
	again := call(t, ada, "release_claim", map[string]any{"claimIds": []string{held["claimId"].(string)}})
	if u := again["unchanged"].([]any)[0].(map[string]any); u["status"] != "released" || !strings.Contains(again["next"].(string), "already released") {
		t.Fatalf("releasing twice: %v", again)
	}
	if none := call(t, ada, "release_claim", map[string]any{"all": true}); !strings.Contains(none["next"].(string), "no active claims") {
		t.Fatalf("releasing all with none held: %v", none)
	}
}
