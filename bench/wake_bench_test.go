package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crosscode/crosscode-mcp/hub"
)

// BenchmarkWakeChannel: waking an idle agent (issue 38). An agent whose
// client is Claude Code, interactive (clientInfo claude-code,
// CLAUDE_CODE_ENTRYPOINT=cli), idles; another agent, in another process,
// hands work off to it; the figure is the time from the handoff's ingest
// (its ingestedAt) to the channel message reaching the idle agent's MCP
// client over stdio. Each iteration starts a fresh idle session (one
// message per 10 s per session), which then idles for a random while
// under a second before the handoff. local: both on the repository's shared
// database; remote: both against the service in this process, and beside
// it the fan-out's own latency in the same run, from the same ingest to a
// WebSocket subscriber's frame.
func BenchmarkWakeChannel(b *testing.B) {
	for _, mode := range []string{"local", "remote"} {
		b.Run(mode, func(b *testing.B) {
			repo := benchRepo(b)
			var args []string
			var frames *frameTimes
			if mode == "remote" {
				s := startService(b, b.TempDir(), hub.Config{})
				args = []string{"--service", s.url, "--token", s.token, "--workspace", "mygame"}
				frames = watchFrames(b, s.url, s.token)
			}
			grace := startAgent(b, binary(b), repo, append([]string{"--actor", "grace@example.com"}, args...)...)
			var wake, fanout []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				ada, got := startIdle(b, repo, args...)
				// It idles a while: the news comes at any moment of the
				// session's reading of the database (every 250 ms in
				// local mode).
				time.Sleep(time.Duration(rand.Int64N(int64(time.Second))))
				b.StartTimer()
				out := grace.call(b, "request_handoff", map[string]any{"toActor": "ada@example.com", "summary": fmt.Sprintf("take over wave %d", i), "claimIds": []string{}})
				var w struct {
					ServerSequence int64     `json:"serverSequence"`
					IngestedAt     time.Time `json:"ingestedAt"`
				}
				wb, _ := json.Marshal(out["write"])
				if err := json.Unmarshal(wb, &w); err != nil || w.IngestedAt.IsZero() {
					b.Fatalf("request_handoff: no ingest in %s", wb)
				}
				select {
				case at := <-got:
					wake = append(wake, at.Sub(w.IngestedAt))
				case <-time.After(10 * time.Second):
					b.Fatal("no channel message within 10 s")
				}
				if frames != nil {
					fanout = append(fanout, frames.wait(b, w.ServerSequence).Sub(w.IngestedAt))
				}
				b.StopTimer()
				ada.Close()
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(ms(percentile(wake, 0.5)), "p50-ms")
			b.ReportMetric(ms(percentile(wake, 0.99)), "p99-ms")
			if fanout != nil {
				b.ReportMetric(ms(percentile(fanout, 0.5)), "fanout-p50-ms")
				b.ReportMetric(ms(percentile(fanout, 0.99)), "fanout-p99-ms")
			}
		})
	}
}

// startIdle starts ada's server as Claude Code does for an interactive
// session, waits for its start (one call: it then waits for news), and
// returns its client and when each channel message reached it.
func startIdle(b *testing.B, repo string, args ...string) (*mcpclient.Client, <-chan time.Time) {
	env := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "CLAUDE_CODE_ENTRYPOINT=cli")
	c, err := mcpclient.NewStdioMCPClientWithOptions(binary(b), env, append([]string{"--actor", "ada@example.com"}, args...),
		transport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env, cmd.Dir = env, repo
			return cmd, nil
		}))
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil { // wires notifications to OnNotification
		b.Fatal(err)
	}
	got := make(chan time.Time, 4)
	c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		if n.Method == "notifications/claude/channel" {
			select {
			case got <- time.Now():
			default:
			}
		}
	})
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = mcpgo.ProtocolVersion20251125
	req.Params.ClientInfo = mcpgo.Implementation{Name: "claude-code", Version: "1"}
	if _, err := c.Initialize(context.Background(), req); err != nil {
		b.Fatal(err)
	}
	call := mcpgo.CallToolRequest{}
	call.Params.Name = "workspace_status"
	if res, err := c.CallTool(context.Background(), call); err != nil || res.IsError {
		b.Fatalf("workspace_status: %v %+v", err, res)
	}
	return c, got
}

// frameTimes are when a WebSocket subscriber got each serverSequence.
type frameTimes struct {
	mu  sync.Mutex
	at  map[int64]time.Time
	new chan struct{}
}

// watchFrames subscribes to the service's fan-out until the benchmark ends.
func watchFrames(b *testing.B, base, token string) *frameTimes {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	conn, _, err := subscribe(ctx, base, token, "watcher")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.CloseNow() })
	f := &frameTimes{at: map[int64]time.Time{}, new: make(chan struct{}, 1)}
	go func() {
		for {
			_, data, err := conn.Read(ctx)
			if err != nil {
				return
			}
			at := time.Now()
			var fr struct {
				Data struct {
					ServerSequence int64 `json:"serverSequence"`
				} `json:"data"`
			}
			if json.Unmarshal(data, &fr) == nil && fr.Data.ServerSequence > 0 {
				f.mu.Lock()
				f.at[fr.Data.ServerSequence] = at
				f.mu.Unlock()
				select {
				case f.new <- struct{}{}:
				default:
				}
			}
		}
	}()
	return f
}

// wait returns when the subscriber got seq.
func (f *frameTimes) wait(b *testing.B, seq int64) time.Time {
	deadline := time.After(10 * time.Second)
	for {
		f.mu.Lock()
		at, ok := f.at[seq]
		f.mu.Unlock()
		if ok {
			return at
		}
		select {
		case <-f.new:
		case <-deadline:
			b.Fatalf("no fan-out frame for serverSequence %d", seq)
		}
	}
}
