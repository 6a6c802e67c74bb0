package coord

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bc "github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/store"
)

// world is one workspace database shared by the coordinators of a test.
type world struct{ path string }

func newWorld(t *testing.T) *world { return &world{path: filepath.Join(t.TempDir(), "ws.db")} }

func (w *world) coord(t *testing.T, actor string) *bc.Coordinator {
	t.Helper()
	return startCoord(t, w.path, bc.Config{Actor: actor})
}

// startCoord starts a coordinator of workspace mygame for cfg.Actor (its
// replica and session named after it) on the database at path; it stops
// with the test.
func startCoord(t *testing.T, path string, cfg bc.Config) *bc.Coordinator {
	t.Helper()
	st, err := store.Open(context.Background(), path, &store.Options{Projections: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Workspace, cfg.Store, cfg.Replica, cfg.Session = "mygame", st, "rep_"+cfg.Actor, "ses_"+cfg.Actor
	c, err := bc.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()); st.Close() })
	return c
}

// call runs tool name of c's toolset with args; it fails the test on a
// tool error, and checks the result's size.
func call(t *testing.T, c *bc.Coordinator, name string, args map[string]any) map[string]any {
	t.Helper()
	out, isErr := callCtx(t, context.Background(), c, name, args)
	if isErr {
		t.Fatalf("%s: %s", name, out["error"])
	}
	return out
}

func num(v any) int { f, _ := v.(float64); return int(f) }

// longPatterns are n patterns under dir, each about 80 bytes.
func longPatterns(dir string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s/%02d/a-rather-long-directory-name/with-another-level/and-a-file-name.gd", dir, i))
	}
	return out
}

// TestConflictResultsStaySmall: with a hundred overlapping claims of many
// patterns each, check_conflicts, a denied claim and publish_intent answer
// within the result cap, counting what they leave out.
func TestConflictResultsStaySmall(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	total := 0
	for _, actor := range []string{"bo", "cy", "dee", "eve"} {
		c := w.coord(t, actor)
		for i := range 25 {
			res, err := c.Claim(ctx, longPatterns(fmt.Sprintf("src/%s/%d", actor, i), 12), false, "tuning", time.Hour, "")
			if err != nil || res.Status != "granted" {
				t.Fatalf("claim: %+v %v", res, err)
			}
			total++
		}
	}
	ada := w.coord(t, "ada")

	cc := call(t, ada, "check_conflicts", map[string]any{"paths": []string{"src/**"}})
	claims := cc["claims"].([]any)
	if cc["clear"] != false || len(claims) == 0 || len(claims)+num(cc["moreClaims"]) != total {
		t.Fatalf("check_conflicts: %d claims shown, %v more, want %d in all", len(claims), cc["moreClaims"], total)
	}
	for _, c := range claims {
		c := c.(map[string]any)
		if len(c["patterns"].([]any)) != maxListed || num(c["morePatterns"]) != 12-maxListed {
			t.Fatalf("a claim's patterns: %d shown, %v more", len(c["patterns"].([]any)), c["morePatterns"])
		}
	}

	own := append([]string{"src/**"}, longPatterns("own", 99)...)
	denied := call(t, ada, "claim", map[string]any{"patterns": own})
	if denied["status"] != "denied" || len(denied["conflicts"].([]any))+num(denied["moreConflicts"]) != total {
		t.Fatalf("denied claim: %v, %d conflicts shown, %v more", denied["status"], len(denied["conflicts"].([]any)), denied["moreConflicts"])
	}
	if pats := denied["patterns"].([]any); len(pats) == 0 || len(pats)+num(denied["morePatterns"]) != len(own) || pats[0] != "src/**" {
		t.Fatalf("denied claim's patterns: %d shown, %v more", len(pats), denied["morePatterns"])
	}
	if next := denied["next"].(string); len(next) > 2000 || !strings.Contains(next, fmt.Sprintf("and %d more", total-maxHolders)) {
		t.Fatalf("next: %d bytes: %.300s", len(next), next)
	}

	pi := call(t, ada, "publish_intent", map[string]any{"summary": "look around", "paths": []string{"src/**"}})
	ov := pi["overlaps"].(map[string]any)
	if len(ov["claims"].([]any))+num(ov["moreClaims"]) != total {
		t.Fatalf("publish_intent overlaps: %d shown, %v more", len(ov["claims"].([]any)), ov["moreClaims"])
	}
}

// TestLabelsStaySmall: a task with thousands of labels, and a page of
// such tasks, answer within the cap; paging still visits every task once.
func TestLabelsStaySmall(t *testing.T) {
	w := newWorld(t)
	ada := w.coord(t, "ada")
	labels := make([]string, 5000)
	for i := range labels {
		labels[i] = fmt.Sprintf("label-%04d-with-some-words", i)
	}
	created := call(t, ada, "create_task", map[string]any{"title": "Many labels", "description": strings.Repeat("d", 2000), "labels": labels})
	task := created["task"].(map[string]any)
	if len(task["labels"].([]any)) != maxListed || num(task["moreLabels"]) != 5000-maxListed {
		t.Fatalf("create_task: %d labels shown, %v more", len(task["labels"].([]any)), task["moreLabels"])
	}
	const tasks = 40
	for i := 1; i < tasks; i++ {
		call(t, ada, "create_task", map[string]any{"title": fmt.Sprintf("Task %d %s", i, strings.Repeat("<", 150)), "description": strings.Repeat("<>&", 200), "labels": labels[:200]})
	}
	seen := map[string]bool{}
	before := 0
	for pages := 0; ; pages++ {
		if pages > tasks {
			t.Fatal("paging does not end")
		}
		args := map[string]any{"limit": 50}
		if before > 0 {
			args["before"] = before
		}
		page := call(t, ada, "list_tasks", args)
		for _, x := range page["tasks"].([]any) {
			id := x.(map[string]any)["taskId"].(string)
			if seen[id] {
				t.Fatalf("task %s listed twice", id)
			}
			seen[id] = true
		}
		if before = num(page["nextBefore"]); before == 0 {
			break
		}
	}
	if len(seen) != tasks {
		t.Fatalf("paging listed %d tasks, want %d", len(seen), tasks)
	}
}

// TestReadFeedMeasuresItems: items whose text grows when encoded (<, >, &
// become \u003c ...) are cut by their encoded size, and the next page
// starts right after the last shown.
func TestReadFeedMeasuresItems(t *testing.T) {
	w := newWorld(t)
	bo := w.coord(t, "bo")
	ctx := context.Background()
	for i := range 100 {
		if _, err := bo.PublishIntent(ctx, fmt.Sprintf("%03d %s", i, strings.Repeat("<>", 150)), []string{fmt.Sprintf("docs/%d/%s", i, strings.Repeat("&", 150))}, "", 0); err != nil {
			t.Fatal(err)
		}
	}
	ada := w.coord(t, "ada")
	var seqs []int
	after := 0
	for pages := 0; len(seqs) < 100; pages++ {
		if pages > 100 {
			t.Fatal("paging does not end")
		}
		page := call(t, ada, "read_feed", map[string]any{"afterSequence": after, "limit": 100, "kind": "intent"})
		items := page["items"].([]any)
		if len(items) == 0 {
			t.Fatalf("an empty page after %d", after)
		}
		for _, it := range items {
			seqs = append(seqs, num(it.(map[string]any)["seq"]))
		}
		if pages == 0 && (len(items) == 100 || page["hasMore"] != true) {
			t.Fatalf("first page: %d items, hasMore %v", len(items), page["hasMore"])
		}
		after = num(page["nextCursor"])
		if after != seqs[len(seqs)-1] {
			t.Fatalf("nextCursor %d, last item %d", after, seqs[len(seqs)-1])
		}
	}
	for i := range seqs {
		if i > 0 && seqs[i] != seqs[i-1]+1 {
			t.Fatalf("feed skipped from %d to %d", seqs[i-1], seqs[i])
		}
	}
}

// TestNewsMakesRoom: when the news digest would take a result over the
// cap, its items give way (counted in more) rather than the result failing.
func TestNewsMakesRoom(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	bo := w.coord(t, "bo")
	ada := w.coord(t, "ada")
	call(t, ada, "workspace_status", nil) // ada's news starts now
	for i := range 25 {
		if _, err := bo.Claim(ctx, longPatterns(fmt.Sprintf("src/x%d", i), 10), false, "tuning", time.Hour, ""); err != nil {
			t.Fatal(err)
		}
	}
	// The newest, shown in the news: about 2,400 bytes each, encoded.
	for i := range 8 {
		if _, err := bo.PublishIntent(ctx, fmt.Sprintf("%d %s", i, strings.Repeat("<", 300)), []string{fmt.Sprintf("src/%d/%s", i, strings.Repeat("&", 150))}, "", 0); err != nil {
			t.Fatal(err)
		}
	}
	cc := call(t, ada, "check_conflicts", map[string]any{"paths": []string{"src/**"}})
	news := cc["news"].(map[string]any)
	if len(news["items"].([]any)) != 0 || num(news["more"]) != 8+25 || len(cc["claims"].([]any)) == 0 {
		t.Fatalf("news: %d items, more %v; %d claims", len(news["items"].([]any)), news["more"], len(cc["claims"].([]any)))
	}
}

// remoteWorld is a coordination service on loopback (its own database) and
// a replica per coordinator, as agents in remote mode have.
type remoteWorld struct{ url, token string }

func newRemoteWorld(t *testing.T) *remoteWorld {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "hub.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	token, err := st.CreateToken(ctx, "mygame", "")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { hub.New(hub.Config{Store: st}).Serve(ctx, l); close(done) }()
	t.Cleanup(func() { cancel(); <-done; st.Close() })
	return &remoteWorld{url: "http://" + l.Addr().String(), token: token}
}

func (w *remoteWorld) coord(t *testing.T, actor string) *bc.Coordinator {
	t.Helper()
	return startCoord(t, filepath.Join(t.TempDir(), actor+".db"), bc.Config{Service: w.url, Token: w.token, Actor: actor})
}

// modes runs test in local mode (one shared database) and in remote mode
// (a service), each with a function that makes an actor's coordinator.
func modes(t *testing.T, test func(t *testing.T, coord func(actor string) *bc.Coordinator)) {
	t.Run("local", func(t *testing.T) {
		w := newWorld(t)
		test(t, func(actor string) *bc.Coordinator { return w.coord(t, actor) })
	})
	t.Run("remote", func(t *testing.T) {
		w := newRemoteWorld(t)
		test(t, func(actor string) *bc.Coordinator { return w.coord(t, actor) })
	})
}
