package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
	"github.com/crosscode/crosscode-mcp/protocol"
)

func jsonMarshalIngest(e *protocol.Envelope) ([]byte, error) {
	return json.Marshal(protocol.IngestRequest{Envelope: e})
}

// subscribe opens a fan-out subscription and returns its connection and cursor.
func subscribe(ctx context.Context, base, token, replica string) (*websocket.Conn, int64, error) {
	c, _, err := websocket.Dial(ctx, strings.Replace(base, "http", "ws", 1)+"/v1/subscribe", nil)
	if err != nil {
		return nil, 0, err
	}
	c.SetReadLimit(1 << 20)
	req, _ := json.Marshal(protocol.WSSubscribe{Type: "subscribe", WorkspaceID: "mygame", ReplicaID: replica, AccessToken: token})
	if err := c.Write(ctx, websocket.MessageText, req); err != nil {
		return nil, 0, err
	}
	_, data, err := c.Read(ctx)
	if err != nil {
		return nil, 0, err
	}
	var ack protocol.WSSubscribed
	if err := json.Unmarshal(data, &ack); err != nil || ack.Type != "subscribed" {
		return nil, 0, fmt.Errorf("subscribe: %s", data)
	}
	return c, ack.Cursor, nil
}

// BenchmarkFanOut: 100 WebSocket subscribers while clients ingest 1,000
// envelopes/s over HTTP; latency from the ingest receipt (the moment the
// client has its 200) to each subscriber's delivery, over every
// (envelope, subscriber) pair. b.N is the number of envelopes.
func BenchmarkFanOut(b *testing.B) {
	s := startService(b, b.TempDir(), hub.Config{})
	runFanOut(b, s.url, s.url, s.token, 8)
}

// runFanOut ingests b.N envelopes at 1,000/s through ingest while 100
// subscribers of subscribe (the same instance or another) receive them,
// and reports the latency from each receipt to each delivery.
//
// The 1,000/s come from a ticker, taken by up to senders at once (each
// waits for its receipt); a tick no sender is free for is dropped, so the
// rate reached says when the machine could not keep up.
func runFanOut(b *testing.B, ingest, subscribeTo, token string, senders int) {
	const subscribers, rate = 100, 1000
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	type delivery struct {
		seq int64
		at  time.Time
	}
	got := make([][]delivery, subscribers)
	var readers sync.WaitGroup
	for i := range subscribers {
		c, _, err := subscribe(ctx, subscribeTo, token, fmt.Sprintf("sub_%d", i))
		if err != nil {
			b.Fatal(err)
		}
		defer c.CloseNow()
		readers.Add(1)
		go func() {
			defer readers.Done()
			for len(got[i]) < b.N {
				_, data, err := c.Read(ctx)
				if err != nil {
					return
				}
				at := time.Now()
				var f struct {
					Data struct {
						ServerSequence int64 `json:"serverSequence"`
					} `json:"data"`
				}
				json.Unmarshal(data, &f)
				got[i] = append(got[i], delivery{f.Data.ServerSequence, at})
			}
		}()
	}

	var mu sync.Mutex
	receipts := map[int64]time.Time{}
	sent := map[int64]time.Time{}
	work := make(chan []byte, b.N)
	for i := 0; i < b.N; i++ {
		body, _ := jsonMarshalIngest(fixture.NewReplica("mygame", fmt.Sprintf("w%d", i), "ada").Any("f", i))
		work <- body
	}
	close(work)
	tick := time.NewTicker(time.Second / rate)
	defer tick.Stop()
	c := newClient()
	var wg sync.WaitGroup
	b.ResetTimer()
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for body := range work {
				<-tick.C
				start := time.Now()
				status, resp, err := post(c, ingest+"/v1/"+collection(body), token, body)
				done := time.Now()
				if err != nil || status != http.StatusOK {
					b.Errorf("ingest: %v %d %s", err, status, resp)
					return
				}
				var r protocol.IngestReceipt
				json.Unmarshal(resp, &r)
				mu.Lock()
				receipts[r.ServerSequence], sent[r.ServerSequence] = done, start
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	waitDone := make(chan struct{})
	go func() { readers.Wait(); close(waitDone) }()
	select {
	case <-waitDone:
	case <-time.After(30 * time.Second):
		b.Fatal("subscribers did not receive every frame")
	}
	b.StopTimer()
	var fromReceipt, fromSend []time.Duration
	for i := range got {
		if len(got[i]) != b.N {
			b.Fatalf("subscriber %d got %d of %d", i, len(got[i]), b.N)
		}
		for j, d := range got[i] {
			if j > 0 && d.seq != got[i][j-1].seq+1 {
				b.Fatalf("subscriber %d: gap or reorder at %d", i, d.seq)
			}
			fromReceipt = append(fromReceipt, max(0, d.at.Sub(receipts[d.seq])))
			fromSend = append(fromSend, d.at.Sub(sent[d.seq]))
		}
	}
	b.ReportMetric(ms(percentile(fromReceipt, 0.5)), "p50-ms")
	b.ReportMetric(ms(percentile(fromReceipt, 0.99)), "p99-ms")
	b.ReportMetric(ms(percentile(fromReceipt, 1)), "max-ms")
	b.ReportMetric(ms(percentile(fromSend, 0.99)), "p99-from-request-ms")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ingests/s")
}
