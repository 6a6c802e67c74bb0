package coord

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	bc "github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/tools"
)

// callCtx runs tool name of c's toolset with args and ctx (a call may be
// cancelled or cut short); a tool error is {"error": its text} and true.
// It checks the result's size.
func callCtx(t *testing.T, ctx context.Context, c *bc.Coordinator, name string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	for _, tl := range All(c, nil) {
		if tl.Def.Name != name {
			continue
		}
		var req mcpgo.CallToolRequest
		req.Params.Name, req.Params.Arguments = name, args
		res, err := tl.Handler(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		text := res.Content[0].(mcpgo.TextContent).Text
		if len(text) > tools.MaxResultBytes {
			t.Fatalf("%s: %d bytes, over the %d-byte cap", name, len(text), tools.MaxResultBytes)
		}
		if res.IsError {
			return map[string]any{"error": text}, true
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(text), &out); err != nil {
			t.Fatal(err)
		}
		return out, false
	}
	t.Fatalf("no tool %s", name)
	return nil, false
}

// newsItems returns the news items of a result with the given event.
func newsItems(out map[string]any, event string) []map[string]any {
	var got []map[string]any
	news, _ := out["news"].(map[string]any)
	items, _ := news["items"].([]any)
	for _, it := range items {
		if m := it.(map[string]any); m["event"] == event {
			got = append(got, m)
		}
	}
	return got
}

// TestClaimWaitsForItsTurn: a claim with waitSeconds on a held file
// queues, its call waits, and when the holder releases it is granted in
// that call, with a lease from the grant; the holder was told who waits.
func TestClaimWaitsForItsTurn(t *testing.T) {
	w := newWorld(t)
	ada, bo := w.coord(t, "ada"), w.coord(t, "bo")
	held := call(t, ada, "claim", map[string]any{"patterns": []string{"src/boss.gd"}, "reason": "phase 2"})
	type result struct {
		out map[string]any
		err bool
	}
	done := make(chan result, 1)
	go func() {
		out, isErr := callCtx(t, context.Background(), bo, "claim", map[string]any{"patterns": []string{"src/boss.gd"}, "reason": "boss intro", "waitSeconds": 600, "ttlMinutes": 10})
		done <- result{out, isErr}
	}()
	// ada's news names the waiter, its claim and its reason.
	var waits []map[string]any
	for deadline := time.Now().Add(30 * time.Second); len(waits) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the holder was never told that bo waits")
		}
		waits = newsItems(call(t, ada, "workspace_status", nil), "claim.created")
		time.Sleep(20 * time.Millisecond)
	}
	if txt := waits[0]["text"].(string); !strings.Contains(txt, "waits for your claim "+held["claimId"].(string)) || !strings.Contains(txt, "boss intro") || waits[0]["forYou"] != true {
		t.Fatalf("holder's news: %v", waits[0])
	}
	st := call(t, ada, "workspace_status", nil)
	mine := st["yourClaims"].([]any)[0].(map[string]any)
	if q, _ := mine["queue"].([]any); len(q) != 1 || q[0].(map[string]any)["actor"] != "bo" || q[0].(map[string]any)["reason"] != "boss intro" {
		t.Fatalf("the holder's claim shows its queue: %v", mine)
	}
	before := time.Now()
	call(t, ada, "release_claim", map[string]any{"claimIds": []string{held["claimId"].(string)}})
	var r result
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the waiting call did not answer after the release")
	}
	if r.err || r.out["status"] != "granted" || r.out["grantedAt"] == nil {
		t.Fatalf("waiting claim: %v", r.out)
	}
	granted, _ := time.Parse(time.RFC3339Nano, r.out["grantedAt"].(string))
	expires, _ := time.Parse(time.RFC3339Nano, r.out["expiresAt"].(string))
	if granted.Before(before.Add(-time.Second)) || !expires.Equal(granted.Add(10*time.Minute)) {
		t.Fatalf("lease from the grant: granted %s, expires %s", granted, expires)
	}
	if !strings.Contains(r.out["next"].(string), "Granted after waiting") {
		t.Fatalf("next: %v", r.out["next"])
	}
	// The grant was told in the claim's own result: the next news does
	// not repeat it.
	if g := newsItems(call(t, bo, "workspace_status", nil), "claim.granted"); len(g) != 0 {
		t.Fatalf("grant told twice: %v", g)
	}
}

// shortCallWait makes claim calls wait 300 ms at most instead of 50 s.
func shortCallWait(t *testing.T) {
	old := callWaitCap
	callWaitCap = 300 * time.Millisecond
	t.Cleanup(func() { callWaitCap = old })
}

// TestClaimCancelledWaitLeavesItQueued: a client that cancels the call
// while it waits gets an answer (queued) and the claim stays in line.
func TestClaimCancelledWaitLeavesItQueued(t *testing.T) {
	w := newWorld(t)
	ada, bo := w.coord(t, "ada"), w.coord(t, "bo")
	call(t, ada, "claim", map[string]any{"patterns": []string{"a.gd"}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // cancelled before it even waits
	out, isErr := callCtx(t, ctx, bo, "claim", map[string]any{"patterns": []string{"a.gd"}, "waitSeconds": 600})
	if isErr || out["status"] != "queued" || num(out["position"]) != 1 {
		t.Fatalf("cancelled wait: %v", out)
	}
	st := call(t, bo, "workspace_status", nil)
	if c := st["yourClaims"].([]any)[0].(map[string]any); c["status"] != "queued" {
		t.Fatalf("after the cancel: %v", c)
	}
}

// TestClaimQueuedThenGrantedInNews: a call whose wait is up first (the
// cap is 50 s, shortened here) answers queued with
// its place in line, the holders and waitUntil; the claim stays queued,
// and the grant, when the holder releases, reaches the waiter in the news
// of its next tool result, once.
func TestClaimQueuedThenGrantedInNews(t *testing.T) {
	w := newWorld(t)
	ada, bo, cy := w.coord(t, "ada"), w.coord(t, "bo"), w.coord(t, "cy")
	held := call(t, ada, "claim", map[string]any{"patterns": []string{"src/**"}})
	shortCallWait(t)
	short := func(c *bc.Coordinator, args map[string]any) map[string]any {
		out, isErr := callCtx(t, context.Background(), c, "claim", args)
		if isErr {
			t.Fatalf("claim: %v", out)
		}
		return out
	}
	first := short(bo, map[string]any{"patterns": []string{"src/boss.gd"}, "waitSeconds": 900})
	second := short(cy, map[string]any{"patterns": []string{"src/*.gd"}, "waitSeconds": 900})
	if first["status"] != "queued" || num(first["position"]) != 1 || first["waitUntil"] == nil || first["expiresAt"] != nil {
		t.Fatalf("first waiter: %v", first)
	}
	if second["status"] != "queued" || num(second["position"]) != 2 {
		t.Fatalf("second waiter: %v", second)
	}
	cs := second["conflicts"].([]any)
	if len(cs) != 2 || !strings.Contains(second["next"].(string), "Queued, position 2") {
		t.Fatalf("second waiter waits for the holder and the first waiter: %v", second)
	}
	// check_conflicts shows the holder's queue, in order.
	cc := call(t, ada, "check_conflicts", map[string]any{"paths": []string{"src/boss.gd"}})
	claims := cc["claims"].([]any)
	if len(claims) != 2 || claims[0].(map[string]any)["status"] != "queued" || claims[1].(map[string]any)["status"] != "queued" {
		t.Fatalf("ada's own claim is no conflict for ada, the claims waiting for it show as queued: %v", claims)
	}
	dee := w.coord(t, "dee")
	cc = call(t, dee, "check_conflicts", map[string]any{"paths": []string{"src/boss.gd"}})
	claims = cc["claims"].([]any)
	if len(claims) != 1 {
		t.Fatalf("check_conflicts: %v", claims)
	}
	q := claims[0].(map[string]any)["queue"].([]any)
	if len(q) != 2 || q[0].(map[string]any)["claimId"] != first["claimId"] || q[1].(map[string]any)["claimId"] != second["claimId"] || num(q[1].(map[string]any)["position"]) != 2 {
		t.Fatalf("queue: %v", q)
	}
	// Nobody jumps the line: a new claim without a wait is denied by the
	// waiters too, even once the holder is gone.
	call(t, ada, "release_claim", map[string]any{"claimIds": []string{held["claimId"].(string)}})
	if d := call(t, dee, "claim", map[string]any{"patterns": []string{"src/boss.gd"}}); d["status"] != "denied" || d["reason"] != "CONFLICT" {
		t.Fatalf("jumping the line: %v", d)
	}
	got := newsItems(call(t, bo, "workspace_status", nil), "claim.granted")
	if len(got) != 1 || got[0]["id"] != first["claimId"] || !strings.Contains(got[0]["text"].(string), "granted") {
		t.Fatalf("bo's news: %v", got)
	}
	if again := newsItems(call(t, bo, "workspace_status", nil), "claim.granted"); len(again) != 0 {
		t.Fatalf("told twice: %v", again)
	}
	// cy is next once bo releases; cy withdraws instead.
	out := call(t, cy, "release_claim", map[string]any{"claimIds": []string{second["claimId"].(string)}})
	if w := out["withdrawn"].([]any); len(w) != 1 {
		t.Fatalf("withdrawal: %v", out)
	}
	call(t, bo, "release_claim", map[string]any{"all": true})
	if g := newsItems(call(t, cy, "workspace_status", nil), "claim.granted"); len(g) != 0 {
		t.Fatalf("a withdrawn claim was granted: %v", g)
	}
	if c := call(t, dee, "claim", map[string]any{"patterns": []string{"src/boss.gd"}}); c["status"] != "granted" {
		t.Fatalf("after the line emptied: %v", c)
	}
}

// TestClaimWaitExpires: a wait shorter than the holder's lease ends
// with the call, answered wait_expired, naming who still holds the paths
// and who waits ahead, as queued and denied do; a wait that ends after
// its call reaches the waiter in news that names them too. In local and
// remote mode.
func TestClaimWaitExpires(t *testing.T) {
	modes(t, func(t *testing.T, coord func(string) *bc.Coordinator) {
		ada, bo, cy, dee := coord("ada"), coord("bo"), coord("cy"), coord("dee")
		held := call(t, ada, "claim", map[string]any{"patterns": []string{"src/boss.gd"}})
		// cy queues first; its call gives up at once, its claim stays in line.
		cut, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		ahead, isErr := callCtx(t, cut, cy, "claim", map[string]any{"patterns": []string{"src/boss.gd"}, "waitSeconds": 600})
		if isErr {
			t.Fatal(ahead)
		}
		waitFor(t, "bo to see cy waiting", func() bool {
			cc := call(t, bo, "check_conflicts", map[string]any{"paths": []string{"src/boss.gd"}})
			return strings.Contains(fmt.Sprint(cc["claims"]), ahead["claimId"].(string))
		})
		out := call(t, bo, "claim", map[string]any{"patterns": []string{"src/boss.gd"}, "waitSeconds": 1})
		next, _ := out["next"].(string)
		if out["status"] != "wait_expired" || out["waitUntil"] == nil || !strings.Contains(next, "wait ended") {
			t.Fatalf("%v", out)
		}
		cs, _ := out["conflicts"].([]any)
		if len(cs) != 2 || cs[0].(map[string]any)["claimId"] != held["claimId"] || cs[0].(map[string]any)["actor"] != "ada" ||
			cs[1].(map[string]any)["claimId"] != ahead["claimId"] || cs[1].(map[string]any)["status"] != "queued" {
			t.Fatalf("wait_expired names the holder and who waits ahead: %v", cs)
		}
		if !strings.Contains(next, "ada holds src/boss.gd until") || !strings.Contains(next, held["claimId"].(string)) || !strings.Contains(next, "cy waits") {
			t.Fatalf("next: %q", next)
		}
		// dee's call gives up before its wait ends; the end reaches it in news.
		cut2, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel2()
		mine, isErr := callCtx(t, cut2, dee, "claim", map[string]any{"patterns": []string{"src/boss.gd"}, "waitSeconds": 1})
		if isErr {
			t.Fatal(mine)
		}
		var told []map[string]any
		waitFor(t, "dee's news of its wait's end", func() bool {
			told = append(told, newsItems(call(t, dee, "workspace_status", nil), "claim.wait_expired")...)
			return len(told) > 0
		})
		if txt := told[0]["text"].(string); told[0]["id"] != mine["claimId"] || !strings.Contains(txt, "ada holds src/boss.gd") || !strings.Contains(txt, held["claimId"].(string)) {
			t.Fatalf("dee's news: %v", told[0])
		}
	})
}

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestClaimDeadlocks: the claim that would close a cycle (two actors, then
// three) is denied at once with DEADLOCK, naming the cycle; the earlier
// waiters keep waiting.
func TestClaimDeadlocks(t *testing.T) {
	w := newWorld(t)
	ada, bo, cy := w.coord(t, "ada"), w.coord(t, "bo"), w.coord(t, "cy")
	shortCallWait(t)
	queue := func(c *bc.Coordinator, path string) map[string]any {
		out, isErr := callCtx(t, context.Background(), c, "claim", map[string]any{"patterns": []string{path}, "waitSeconds": 600})
		if isErr {
			t.Fatal(out)
		}
		return out
	}
	call(t, ada, "claim", map[string]any{"patterns": []string{"a.gd"}})
	call(t, bo, "claim", map[string]any{"patterns": []string{"b.gd"}})
	call(t, cy, "claim", map[string]any{"patterns": []string{"c.gd"}})
	if q := queue(ada, "b.gd"); q["status"] != "queued" {
		t.Fatalf("ada waits for b.gd: %v", q)
	}
	two := queue(bo, "a.gd")
	if two["status"] != "denied" || two["reason"] != "DEADLOCK" || len(two["cycle"].([]any)) != 2 || !strings.Contains(two["next"].(string), "DEADLOCK") {
		t.Fatalf("2-cycle: %v", two)
	}
	if q := queue(bo, "c.gd"); q["status"] != "queued" {
		t.Fatalf("bo waits for c.gd: %v", q)
	}
	three := queue(cy, "a.gd")
	cycle, _ := three["cycle"].([]any)
	if three["status"] != "denied" || three["reason"] != "DEADLOCK" || len(cycle) != 3 {
		t.Fatalf("3-cycle: %v", three)
	}
	var actors []string
	for _, e := range cycle {
		actors = append(actors, e.(map[string]any)["actor"].(string))
	}
	if strings.Join(actors, ",") != "cy,ada,bo" {
		t.Fatalf("cycle: %v", cycle)
	}
	// The earlier waiters are untouched.
	st := call(t, ada, "workspace_status", nil)
	queued := 0
	for _, c := range st["yourClaims"].([]any) {
		if c.(map[string]any)["status"] == "queued" {
			queued++
		}
	}
	if queued != 1 {
		t.Fatalf("ada's claims: %v", st["yourClaims"])
	}
}

// TestClaimWaitSecondsBadInput: waitSeconds out of range or not a number
// is a tool error in plain words, and nothing is written.
func TestClaimWaitSecondsBadInput(t *testing.T) {
	w := newWorld(t)
	ada := w.coord(t, "ada")
	head, _ := ada.Head(context.Background())
	for _, v := range []any{-1, 3601, "soon", 1.5} {
		out, isErr := callCtx(t, context.Background(), ada, "claim", map[string]any{"patterns": []string{"a.gd"}, "waitSeconds": v})
		if !isErr || !strings.Contains(out["error"].(string), "waitSeconds") {
			t.Fatalf("waitSeconds %v: %v", v, out)
		}
	}
	if now, _ := ada.Head(context.Background()); now != head {
		t.Fatalf("bad input wrote to the log: head %d -> %d", head, now)
	}
}
