package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

var (
	buildOnce     sync.Once
	binPath       string
	noopPath      string
	buildErr      error
	noopBuildOnce sync.Once
	noopBuildErr  error
)

// goBuild builds a command of this module as the release does: no cgo,
// so a static binary.
func goBuild(out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %v: %s", pkg, err, b)
	}
	return nil
}

// binary builds crosscode-mcp once per benchmark run, or is
// $CROSSCODE_BENCH_BINARY (a binary built beforehand: the Windows one,
// when these run under Wine, where there is no go command).
func binary(b *testing.B) string {
	if p := os.Getenv("CROSSCODE_BENCH_BINARY"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "crosscode-bench-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "crosscode-mcp")
		buildErr = goBuild(binPath, "../cmd/crosscode-mcp")
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return binPath
}

// haveGo says whether the go command is there to build the no-op server
// (not under Wine).
func haveGo() bool {
	_, err := exec.LookPath("go")
	return err == nil
}

// noopBinary builds internal/testing/noopmcp, the floor of the stdio
// figures: an mcp-go stdio server that does nothing of its own.
func noopBinary(b *testing.B) string {
	noopBuildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "crosscode-bench-noop")
		if err != nil {
			noopBuildErr = err
			return
		}
		noopPath = filepath.Join(dir, "noopmcp")
		noopBuildErr = goBuild(noopPath, "../internal/testing/noopmcp")
	})
	if noopBuildErr != nil {
		b.Fatal(noopBuildErr)
	}
	return noopPath
}

// benchRepo is a fresh repository; where git cannot run (under Wine), a
// plain folder, whose local state the server keeps in the user cache dir.
func benchRepo(b *testing.B) string {
	dir := filepath.Join(b.TempDir(), "mygame")
	os.MkdirAll(dir, 0o755)
	if sysdeps.UnderWine() {
		return dir
	}
	cmd := exec.Command("git", "init", "-q", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git init: %v %s", err, out)
	}
	return dir
}

type stdioAgent struct {
	c   *mcpclient.Client
	cmd *exec.Cmd
}

// startStdio starts the server as a subprocess in repo and initializes it.
func startStdio(b *testing.B, repo string, args ...string) *stdioAgent {
	return startAgent(b, binary(b), repo, append([]string{"--actor", "ada@example.com"}, args...)...)
}

// startNoopMCP starts the no-op server (the floor) and initializes it.
func startNoopMCP(b *testing.B, dir string) *stdioAgent {
	return startAgent(b, noopBinary(b), dir)
}

// startAgent starts exe with args in dir, as an MCP client does, and
// initializes it.
func startAgent(b *testing.B, exe, dir string, args ...string) *stdioAgent {
	a := &stdioAgent{}
	env := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	c, err := mcpclient.NewStdioMCPClientWithOptions(exe, env, args,
		transport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env, cmd.Dir = env, dir
			a.cmd = cmd
			return cmd, nil
		}))
	if err != nil {
		b.Fatal(err)
	}
	a.c = c
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = mcpgo.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcpgo.Implementation{Name: "claude-code", Version: "1"}
	if _, err := c.Initialize(context.Background(), req); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return a
}

func (a *stdioAgent) call(b *testing.B, tool string, args map[string]any) map[string]any {
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := a.c.CallTool(context.Background(), req)
	if err != nil || res.IsError {
		b.Fatalf("%s: %v %+v", tool, err, res)
	}
	var out map[string]any
	json.Unmarshal([]byte(res.Content[0].(mcpgo.TextContent).Text), &out)
	return out
}

func reportLatency(b *testing.B, lat []time.Duration) {
	b.ReportMetric(ms(percentile(lat, 0.5)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 0.99)), "p99-ms")
}

// BenchmarkStdioPublishIntent: a durable write tool over stdio from a
// client in another process, local mode; beside it, in turn within each
// iteration (so all share the machine's load), a call of the no-op
// server's tool with the same arguments (the floor), and the raw
// database's floor: one durable commit of one row (rawcommit), what any
// durable write pays on this disk before any of crosscode-mcp's work.
func BenchmarkStdioPublishIntent(b *testing.B) {
	repo := benchRepo(b)
	a := startStdio(b, repo)
	args := map[string]any{"summary": "rebalance the boss", "paths": []string{"src/game/boss.gd"}}
	a.call(b, "publish_intent", args)
	var noop *stdioAgent
	if haveGo() {
		noop = startNoopMCP(b, repo)
		noop.call(b, "noop", args)
	}
	// The raw database's floor: one durable row, a transaction of one
	// INSERT in a WAL database with synchronous=FULL on the same disk, as
	// the store commits (modernc's SQLite, in this process: no transport).
	raw, err := sql.Open("sqlite", "file:"+filepath.ToSlash(filepath.Join(b.TempDir(), "raw.db"))+
		"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	if _, err := raw.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	insert, err := raw.Prepare(`INSERT INTO t (body) VALUES (?)`)
	if err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	var floor, rawCommit []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if noop != nil {
			start := time.Now()
			noop.call(b, "noop", args)
			floor = append(floor, time.Since(start))
		}
		start := time.Now()
		tx, err := raw.Begin()
		if err == nil {
			_, err = tx.Stmt(insert).Exec(`{"summary":"rebalance the boss","paths":["src/game/boss.gd"]}`)
			err = errors.Join(err, tx.Commit())
		}
		if err != nil {
			b.Fatal(err)
		}
		rawCommit = append(rawCommit, time.Since(start))
		start = time.Now()
		out := a.call(b, "publish_intent", args)
		lat = append(lat, time.Since(start))
		if i == 0 && fmt.Sprint(out["write"].(map[string]any)["status"]) != "acknowledged" {
			b.Fatalf("not durable: %v", out["write"])
		}
	}
	reportLatency(b, lat)
	if floor != nil {
		reportFloor(b, lat, floor)
	}
	b.ReportMetric(ms(percentile(rawCommit, 0.5)), "rawcommit-p50-ms")
}

// reportFloor reports the floor's p50 and how far the figure's p50 is
// above it.
func reportFloor(b *testing.B, lat, floor []time.Duration) {
	b.ReportMetric(ms(percentile(floor, 0.5)), "noop-p50-ms")
	b.ReportMetric(ms(percentile(floor, 0.99)), "noop-p99-ms")
	b.ReportMetric(ms(percentile(lat, 0.5))-ms(percentile(floor, 0.5)), "over-noop-p50-ms")
}

// BenchmarkStdioCheckConflicts10k: check_conflicts for a concrete path
// against 10,000 active claims of 313 actors.
func BenchmarkStdioCheckConflicts10k(b *testing.B) {
	benchCheckConflicts(b, 0)
}

// BenchmarkStdioCheckConflictsQueued (issue 24): the same with none and
// with 1,000 claims waiting their turn, one behind each of a thousand of
// the held claims (the one checked among them), in the same run.
func BenchmarkStdioCheckConflictsQueued(b *testing.B) {
	for _, queued := range []int{0, 1000} {
		b.Run(fmt.Sprintf("queued=%d", queued), func(b *testing.B) { benchCheckConflicts(b, queued) })
	}
}

// benchCheckConflicts measures check_conflicts over stdio for one path,
// with 10,000 active claims and `queued` claims waiting behind the first
// `queued` claims on src/modN/**.
func benchCheckConflicts(b *testing.B, queued int) {
	repo := benchRepo(b)
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(repo, ".git", "crosscode", "workspace.db"), &store.Options{Projections: true})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := st.EnsureWorkspace(ctx, "mygame", ""); err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	var items []store.Item
	flush := func() {
		res, err := st.IngestBatch(ctx, items)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
		items = items[:0]
	}
	seq := int64(0)
	add := func(c *protocol.Claim) {
		seq++
		e := &protocol.Envelope{ID: c.ID, SchemaVersion: 1, WorkspaceID: "mygame", ReplicaID: c.ReplicaID, ActorID: c.ActorID, SessionID: "ses",
			Agent: &protocol.Agent{Provider: protocol.ProviderCodex}, Type: protocol.EventClaimCreated, ClientSequence: seq, CreatedAt: now, Payload: c}
		items = append(items, store.Item{Workspace: "mygame", Envelope: e})
		if len(items) == 500 {
			flush()
		}
	}
	for i := range 10_000 {
		actor := fmt.Sprintf("actor%d@example.com", i/32)
		pattern := []string{fmt.Sprintf("src/mod%d/**", i), fmt.Sprintf("assets/lvl%d/*.png", i), fmt.Sprintf("pkg/%d/file%d.go", i%500, i)}[i%3]
		add(&protocol.Claim{ID: fmt.Sprintf("clm_%06d", i), WorkspaceID: "mygame", ActorID: actor, ReplicaID: "rep_" + actor,
			Patterns: []string{pattern}, Exclusive: true, Reason: "bench", CreatedAt: now, ExpiresAt: now.Add(8 * time.Hour)})
	}
	wait := now.Add(time.Hour)
	for q := range queued {
		// One waiter behind src/mod{3q}/**, each its own actor (the
		// per-actor limit counts waits too).
		actor := fmt.Sprintf("waiter%d@example.com", q)
		add(&protocol.Claim{ID: fmt.Sprintf("clm_w%05d", q), WorkspaceID: "mygame", ActorID: actor, ReplicaID: "rep_" + actor,
			Patterns: []string{fmt.Sprintf("src/mod%d/main.go", 3*q)}, Exclusive: true, Reason: "waiting", CreatedAt: now, ExpiresAt: now.Add(time.Hour), WaitUntil: &wait})
	}
	if len(items) > 0 {
		flush()
	}
	ents, _ := st.CountEntities(ctx, store.EntityQuery{Workspace: "mygame", Kind: protocol.KindClaim, Status: []string{store.ClaimActive}, LiveAt: now})
	waiting, _ := st.CountEntities(ctx, store.EntityQuery{Workspace: "mygame", Kind: protocol.KindClaim, Status: []string{store.ClaimQueued}, LiveAt: now})
	st.Close()
	if ents != 10_000 || waiting != queued {
		b.Fatalf("%d active claims and %d queued, want 10000 and %d", ents, waiting, queued)
	}
	a := startStdio(b, repo)
	args := map[string]any{"paths": []string{"src/mod42/main.go"}} // held by clm_000042; waiter 14 queued behind it
	out := a.call(b, "check_conflicts", args)
	claims, _ := out["claims"].([]any)
	if len(claims) != 1 {
		b.Fatalf("check_conflicts: %v", out)
	}
	if q, _ := claims[0].(map[string]any)["queue"].([]any); len(q) != min(queued, 1) {
		b.Fatalf("check_conflicts: the held claim's queue is %v, want %d waiting", q, min(queued, 1))
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		a.call(b, "check_conflicts", args)
		lat = append(lat, time.Since(start))
	}
	reportLatency(b, lat)
}

// BenchmarkStdioStartup: from starting the process to the answer of
// tools/list, and that answer's size; beside it, in turn within each
// iteration, the same for the no-op server (the floor).
func BenchmarkStdioStartup(b *testing.B) {
	repo := benchRepo(b)
	startStdio(b, repo).c.Close() // first start creates the database
	floors := haveGo()
	var lat, floor []time.Duration
	var size int
	list := func(start func() *stdioAgent) (time.Duration, int) {
		t0 := time.Now()
		a := start()
		res, err := a.c.ListTools(context.Background(), mcpgo.ListToolsRequest{})
		if err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		raw, _ := json.Marshal(res)
		a.c.Close()
		return d, len(raw)
	}
	for i := 0; i < b.N; i++ {
		if floors {
			d, _ := list(func() *stdioAgent { return startNoopMCP(b, repo) })
			floor = append(floor, d)
		}
		d, n := list(func() *stdioAgent { return startStdio(b, repo) })
		lat, size = append(lat, d), n
	}
	reportLatency(b, lat)
	if floors {
		reportFloor(b, lat, floor)
	}
	b.ReportMetric(float64(size)/1024, "tools/list-KiB")
}

// BenchmarkStdioIdleRSS: resident memory of a server that started,
// answered a few calls and went idle.
func BenchmarkStdioIdleRSS(b *testing.B) {
	for i := 0; i < b.N; i++ {
		a := startStdio(b, benchRepo(b))
		a.call(b, "workspace_status", nil)
		a.call(b, "publish_intent", map[string]any{"summary": "x", "paths": []string{"a/**"}})
		a.call(b, "claim", map[string]any{"patterns": []string{"a/**"}})
		time.Sleep(2 * time.Second)
		rss, hwm := procMem(b, a.cmd.Process.Pid)
		b.ReportMetric(rss/1024, "idle-RSS-MiB")
		b.ReportMetric(hwm/1024, "peak-RSS-MiB")
		a.c.Close()
	}
}

// procMem reads VmRSS and VmHWM (KiB) of a process.
func procMem(b *testing.B, pid int) (rss, hwm float64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 {
			v, _ := strconv.ParseFloat(f[1], 64)
			switch f[0] {
			case "VmRSS:":
				rss = v
			case "VmHWM:":
				hwm = v
			}
		}
	}
	return rss, hwm
}
