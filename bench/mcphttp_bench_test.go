package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/mcp"
	"github.com/crosscode/crosscode-mcp/store"
)

// MCP over HTTP (issue 26): the service's /mcp beside the same tools over
// stdio in remote mode, and beside its floor, a no-op mcp-go Streamable
// HTTP server on the same net/http stack, called by the same client.

// startMCPService runs the hub in-process on SQLite with its /mcp (no
// rate limit in the way).
func startMCPService(b *testing.B) *service {
	s := startService(b, b.TempDir(), hub.Config{SweepEvery: -1})
	mirror, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "mirror.db"), &store.Options{Projections: true, Cache: true})
	if err != nil {
		b.Fatal(err)
	}
	ep, err := mcp.NewHTTP(mcp.HTTPConfig{Hub: s.srv, Mirror: mirror, Rate: 1e6, Burst: 1e6})
	if err != nil {
		b.Fatal(err)
	}
	s.srv.Handle("/mcp", ep)
	b.Cleanup(func() { ep.Close(); mirror.Close() })
	return s
}

// startNoopHTTP serves a no-op tool with mcp-go's Streamable HTTP server:
// the floor of a tool call over HTTP.
func startNoopHTTP(b *testing.B) string {
	m := server.NewMCPServer("noop", "1", server.WithToolCapabilities(false))
	m.AddTool(mcpgo.NewTool("noop"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("{}"), nil
	})
	s := startService(b, b.TempDir(), hub.Config{SweepEvery: -1}) // for its listener only
	s.srv.Handle("/noop", server.NewStreamableHTTPServer(m, server.WithDisableStreaming(true)))
	return s.url + "/noop"
}

// httpSession opens an MCP session over HTTP (the 2025-11-25 handshake).
func httpSession(b *testing.B, url, token, actor string) *mcpclient.Client {
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token, "X-Crosscode-Actor": actor}))
	if err != nil {
		b.Fatal(err)
	}
	c := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion(mcpgo.ProtocolVersion20251125))
	req := mcpgo.InitializeRequest{}
	req.Params.ClientInfo = mcpgo.Implementation{Name: "claude-code", Version: "1"}
	if _, err := c.Initialize(context.Background(), req); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func callMCP(b *testing.B, c *mcpclient.Client, tool string, args map[string]any) *mcpgo.CallToolResult {
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := c.CallTool(context.Background(), req)
	if err != nil || res.IsError {
		b.Fatalf("%s: %v %+v", tool, err, res)
	}
	return res
}

// BenchmarkMCPHTTPClaim: a claim (a durable write, arbitrated, with news)
// over /mcp, the same claim by a stdio server in remote mode against the
// same service, and a no-op tool call over mcp-go's Streamable HTTP
// server, interleaved in one run; each claim is released (untimed).
func BenchmarkMCPHTTPClaim(b *testing.B) {
	s := startMCPService(b)
	httpC := httpSession(b, s.url+"/mcp", s.token, "ada@example.com")
	stdio := startStdio(b, benchRepo(b), "--toolsets", "coord", "--service", s.url, "--token", s.token)
	noop := httpSession(b, startNoopHTTP(b), "", "x")
	var overHTTP, overStdio, floor []time.Duration
	claim := func(call func(string, map[string]any) map[string]any, i int, lat *[]time.Duration) {
		start := time.Now()
		out := call("claim", map[string]any{"patterns": []string{fmt.Sprintf("src/f%d.gd", i)}})
		*lat = append(*lat, time.Since(start))
		if out["status"] != "granted" {
			b.Fatalf("claim: %v", out)
		}
		call("release_claim", map[string]any{"claimIds": []string{out["claimId"].(string)}})
	}
	viaHTTP := func(tool string, args map[string]any) map[string]any {
		return callMCP(b, httpC, tool, args).StructuredContent.(map[string]any)
	}
	viaStdio := func(tool string, args map[string]any) map[string]any { return stdio.call(b, tool, args) }
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		claim(viaHTTP, i, &overHTTP)
		claim(viaStdio, i, &overStdio)
		start := time.Now()
		callMCP(b, noop, "noop", nil)
		floor = append(floor, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(ms(percentile(overHTTP, 0.5)), "http-p50-ms")
	b.ReportMetric(ms(percentile(overStdio, 0.5)), "stdio-remote-p50-ms")
	b.ReportMetric(ms(percentile(overHTTP, 0.5)-percentile(overStdio, 0.5)), "http-minus-stdio-p50-ms")
	b.ReportMetric(ms(percentile(floor, 0.5)), "floor-noop-http-p50-ms")
	b.ReportMetric(ms(percentile(overHTTP, 0.99)), "http-p99-ms")
}

// BenchmarkMCPHTTP500Sessions: 500 MCP sessions over HTTP held open by
// one instance, each calling check_conflicts about once a second
// (jittered) for 10 s after a first call each (untimed), while 20 other
// sessions hold claims; beside it, the same
// 500 sessions' load of no-op calls against mcp-go's server. Run with
// -benchtime=1x.
func BenchmarkMCPHTTP500Sessions(b *testing.B) {
	const sessions, seconds = 500, 10
	run := func(url, token, tool string, args func(i int) map[string]any) []time.Duration {
		cs := make([]*mcpclient.Client, sessions)
		for i := range cs {
			cs[i] = httpSession(b, url, token, fmt.Sprintf("agent%d@example.com", i))
		}
		// Every session's first call (its presence is reported then), untimed.
		var wg sync.WaitGroup
		for i, c := range cs {
			wg.Go(func() { callMCP(b, c, tool, args(i)) })
		}
		wg.Wait()
		time.Sleep(2 * time.Second)
		var mu sync.Mutex
		var lat []time.Duration
		end := time.Now().Add(seconds * time.Second)
		for i, c := range cs {
			wg.Go(func() {
				time.Sleep(time.Duration(rand.Int64N(int64(time.Second))))
				for time.Now().Before(end) {
					start := time.Now()
					callMCP(b, c, tool, args(i))
					d := time.Since(start)
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
					time.Sleep(time.Duration(500+rand.Int64N(1000)) * time.Millisecond)
				}
			})
		}
		wg.Wait()
		return lat
	}
	s := startMCPService(b)
	holders := make([]*mcpclient.Client, 20)
	for i := range holders {
		holders[i] = httpSession(b, s.url+"/mcp", s.token, fmt.Sprintf("holder%d@example.com", i))
		callMCP(b, holders[i], "claim", map[string]any{"patterns": []string{fmt.Sprintf("src/mod%d/**", i)}})
	}
	b.ResetTimer()
	for range b.N {
		lat := run(s.url+"/mcp", s.token, "check_conflicts", func(i int) map[string]any {
			return map[string]any{"paths": []string{fmt.Sprintf("src/mod%d/main.go", i%40)}}
		})
		floor := run(startNoopHTTP(b), "", "noop", func(int) map[string]any { return nil })
		b.ReportMetric(float64(len(lat)), "calls")
		b.ReportMetric(ms(percentile(lat, 0.5)), "p50-ms")
		b.ReportMetric(ms(percentile(lat, 0.99)), "p99-ms")
		b.ReportMetric(ms(percentile(floor, 0.5)), "floor-noop-p50-ms")
		b.ReportMetric(ms(percentile(floor, 0.99)), "floor-noop-p99-ms")
	}
}
