package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/crosscode/crosscode-mcp/internal/testing/browsertest"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// wsArrivals subscribes to the service's fan-out as a plain WebSocket
// client and records when each serverSequence arrives.
func wsArrivals(b *testing.B, s *service) (arrived func(seq int64, within time.Duration) (time.Time, bool)) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	c, _, err := websocket.Dial(ctx, strings.Replace(s.URL, "http", "ws", 1)+"/v1/subscribe", nil)
	if err != nil {
		b.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	req, _ := json.Marshal(protocol.WSSubscribe{Type: "subscribe", WorkspaceID: wsName, ReplicaID: "bench-ws", AccessToken: s.Token})
	if err := c.Write(ctx, websocket.MessageText, req); err != nil {
		b.Fatal(err)
	}
	if _, _, err := c.Read(ctx); err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	at := map[int64]time.Time{}
	waiters := map[int64]chan time.Time{}
	go func() {
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				return
			}
			now := time.Now()
			var f struct {
				Data struct {
					ServerSequence int64 `json:"serverSequence"`
				} `json:"data"`
			}
			if json.Unmarshal(data, &f) == nil && f.Data.ServerSequence > 0 {
				mu.Lock()
				at[f.Data.ServerSequence] = now
				if ch := waiters[f.Data.ServerSequence]; ch != nil {
					ch <- now
					delete(waiters, f.Data.ServerSequence)
				}
				mu.Unlock()
			}
		}
	}()
	return func(seq int64, within time.Duration) (time.Time, bool) {
		mu.Lock()
		if t, ok := at[seq]; ok {
			mu.Unlock()
			return t, true
		}
		ch := make(chan time.Time, 1)
		waiters[seq] = ch
		mu.Unlock()
		select {
		case t := <-ch:
			return t, true
		case <-time.After(within):
			return time.Time{}, false
		}
	}
}

// pct is the p-th percentile of sorted ms values.
func pct(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// BenchmarkClaimToPage: a claim ingested over HTTP, from its receipt's
// ingestedAt (the commit) to the page drawing it in headless Chromium
// (the render's performance.timeOrigin + now), beside the WebSocket
// fan-out's delivery of the same claim to a Go subscriber in the same run.
// One claim at a time; b.N claims.
func BenchmarkClaimToPage(b *testing.B) {
	s := newService(b, nil)
	a := newAgent("rep-bench", "bench@studio.dev", protocol.ProviderClaude)
	s.presence(b, a, protocol.PresenceOnline)
	arrived := wsArrivals(b, s)
	br := browsertest.New(b, 1280, 900)
	br.Must(chromedp.Navigate(s.URL + "/"))
	br.WaitTrue(10*time.Second, `!document.getElementById('login').hidden`)
	br.Must(chromedp.SendKeys(chromedp.CSS("#token"), s.Token), chromedp.Click(chromedp.CSS("#login-form button")))
	br.WaitTrue(10*time.Second, `document.querySelector('#live').dataset.state === 'live'`)
	browsertest.Eval[string](br, `location.hash = 'claims'`)

	var page, ws []float64
	b.ResetTimer()
	for i := range b.N {
		r := s.ingest(b, a.claim(fmt.Sprintf("clm-bench-%d", i), false, "bench", fmt.Sprintf("bench/%d/**", i)))
		br.WaitTrue(10*time.Second, fmt.Sprintf(`dashboardStats.drawnSeq >= %d && document.querySelector('tr[data-claim="clm-bench-%d"]') !== null`, r.ServerSequence, i))
		drawn := browsertest.Eval[float64](br, fmt.Sprintf(`dashboardStats.draws.find((d) => d.seq >= %d && d.view === 'claims').at`, r.ServerSequence))
		commit := float64(r.IngestedAt.UnixNano()) / 1e6
		page = append(page, drawn-commit)
		t, ok := arrived(r.ServerSequence, 10*time.Second)
		if !ok {
			b.Fatalf("the WebSocket subscriber never got #%d", r.ServerSequence)
		}
		ws = append(ws, float64(t.UnixNano())/1e6-commit)
	}
	b.StopTimer()
	slices.Sort(page)
	slices.Sort(ws)
	b.ReportMetric(pct(page, 50), "page-p50-ms")
	b.ReportMetric(pct(page, 99), "page-p99-ms")
	b.ReportMetric(pct(ws, 50), "ws-p50-ms")
	b.ReportMetric(pct(ws, 99), "ws-p99-ms")
}

// BenchmarkRender: the page with 10,000 active claims of 1,000 agents
// (1,000 presences): each iteration changes the claims view's filter and
// times the render it causes, inside the page (performance.now around the
// render). The same is measured on an empty workspace in the same run
// (the floor: what a render costs with nothing to draw), and on the
// agents view. The first load of the 10,000 claims is reported too.
func BenchmarkRender(b *testing.B) {
	const agents, perAgent = 1000, 10
	full := newService(b, nil)
	var wg sync.WaitGroup
	work := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				a := newAgent(fmt.Sprintf("rep-%04d", i), fmt.Sprintf("agent%04d@studio.dev", i), protocol.ProviderClaude)
				full.presence(b, a, protocol.PresenceOnline)
				for j := range perAgent {
					full.ingest(b, a.claim(fmt.Sprintf("clm-%04d-%02d", i, j), j%2 == 0, "bench", fmt.Sprintf("src/mod%04d/part%02d/**", i, j)))
				}
			}
		})
	}
	for i := range agents {
		work <- i
	}
	close(work)
	wg.Wait()
	empty := newService(b, nil)

	// measure reports the load time and the median and 90th percentile
	// render, and the median time of a bare loop (1e6 Math.sqrt) in the
	// same page: the machine's own speed at that moment.
	measure := func(s *service, viewName string, filters []string) (load time.Duration, p50, p90, loop float64) {
		br := browsertest.New(b, 1280, 900)
		br.Must(chromedp.Navigate(s.URL + "/"))
		br.WaitTrue(10*time.Second, `!document.getElementById('login').hidden`)
		start := time.Now()
		br.Must(chromedp.SendKeys(chromedp.CSS("#token"), s.Token), chromedp.Click(chromedp.CSS("#login-form button")))
		br.WaitTrue(60*time.Second, `document.querySelector('#live').dataset.state === 'live'`)
		load = time.Since(start)
		browsertest.Eval[string](br, fmt.Sprintf(`location.hash = %q`, viewName))
		br.WaitTrue(10*time.Second, fmt.Sprintf(`dashboardStats.draws.at(-1).view === %q`, viewName))
		var renders, loops []float64
		for i := range b.N {
			n := browsertest.Eval[int](br, `dashboardStats.renders`)
			browsertest.Eval[bool](br, fmt.Sprintf(`(() => { const f = document.getElementById('filter'); f.value = %q; f.dispatchEvent(new Event('input')); return true; })()`, filters[i%len(filters)]))
			br.WaitTrue(10*time.Second, fmt.Sprintf(`dashboardStats.renders > %d`, n))
			renders = append(renders, browsertest.Eval[float64](br, `dashboardStats.lastRenderMs`))
			loops = append(loops, browsertest.Eval[float64](br, `(() => { const t0 = performance.now(); let x = 0; for (let i = 0; i < 1e6; i++) x += Math.sqrt(i); return x > 0 ? performance.now() - t0 : 0; })()`))
		}
		if errs := br.Errors(); len(errs) > 0 {
			b.Fatalf("console errors: %v", errs)
		}
		slices.Sort(renders)
		slices.Sort(loops)
		return load, pct(renders, 50), pct(renders, 90), pct(loops, 50)
	}
	b.ResetTimer()
	load, claims50, claims90, loop := measure(full, "claims", []string{"", "src/mod0", "agent09", ""})
	_, agents50, agents90, _ := measure(full, "agents", []string{"", "agent01", ""})
	emptyLoad, empty50, empty90, _ := measure(empty, "claims", []string{"", "src", ""})
	b.StopTimer()
	b.ReportMetric(claims50, "claims-render-p50-ms")
	b.ReportMetric(claims90, "claims-render-p90-ms")
	b.ReportMetric(agents50, "agents-render-p50-ms")
	b.ReportMetric(agents90, "agents-render-p90-ms")
	b.ReportMetric(empty50, "empty-render-p50-ms")
	b.ReportMetric(empty90, "empty-render-p90-ms")
	b.ReportMetric(loop, "loop-1e6-sqrt-ms")
	b.ReportMetric(float64(load.Milliseconds()), "load-10k-ms")
	b.ReportMetric(float64(emptyLoad.Milliseconds()), "load-empty-ms")
}
