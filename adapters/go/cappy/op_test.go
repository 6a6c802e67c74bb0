package cappy_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/crosscode/crosscode-mcp/adapters/go/cappy"
	"github.com/crosscode/crosscode-mcp/adapters/go/cappy/cappytest"
	"github.com/crosscode/crosscode-mcp/protocol"
)

func localOp(t *testing.T) (*cappy.Op, *[]protocol.Event, func(), context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var evs []protocol.Event
	op, stop := cappy.NewLocalOp(ctx, "op_local", func(e protocol.Event) error {
		evs = append(evs, e)
		return nil
	})
	return op, &evs, stop, cancel
}

func TestEmitEncoding(t *testing.T) {
	op, evs, _, _ := localOp(t)
	type hit struct {
		Target string `json:"target"`
		Damage int    `json:"damage"`
	}
	steps := []struct {
		t       float64
		name    string
		dur     *float64
		payload any
		want    string // payload as received; "" = none
	}{
		{0, "START", nil, nil, ""},
		{0, "RAW", nil, json.RawMessage(` {"a": [1, 2]} `), `{"a": [1, 2]}`},
		{12.5, "HIT", ptr(120.0), hit{"boss", 7}, `{"target":"boss","damage":7}`},
		{12.5, "MAP", nil, map[string]any{"b": 1, "a": "x"}, `{"a":"x","b":1}`},
		{1e-7, "TINY_T?", nil, nil, ""}, // rejected below: t goes back
		{40, `quote"and\back`, nil, nil, ""},
		{41, "ünï cødé", nil, nil, ""},
		{42, "NULL", nil, json.RawMessage("null"), ""},
		{1e22, "HUGE", ptr(0.001), (*hit)(nil), ""},
	}
	var wantNames []string
	for _, s := range steps {
		err := op.Emit(s.t, s.name, s.dur, s.payload)
		if s.name == "TINY_T?" {
			if err == nil || !strings.Contains(err.Error(), "goes back") {
				t.Fatalf("t going back: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Emit(%v, %q): %v", s.t, s.name, err)
		}
		wantNames = append(wantNames, s.name)
	}
	if len(*evs) != len(wantNames) {
		t.Fatalf("%d events, want %d", len(*evs), len(wantNames))
	}
	j := 0
	for _, s := range steps {
		if s.name == "TINY_T?" {
			continue
		}
		e := (*evs)[j]
		j++
		if e.Op != "op_local" || e.Event != s.name || e.T != s.t || string(e.Payload) != s.want {
			t.Errorf("event %q = %+v payload %q, want t=%v payload %q", s.name, e, e.Payload, s.t, s.want)
		}
		if (s.dur == nil) != (e.DurationMs == nil) || (s.dur != nil && *s.dur != *e.DurationMs) {
			t.Errorf("event %q durationMs = %v, want %v", s.name, e.DurationMs, s.dur)
		}
	}
}

func TestEmitRefusesInvalidEvents(t *testing.T) {
	op, evs, _, _ := localOp(t)
	for _, tc := range []struct {
		name    string
		t       float64
		event   string
		dur     *float64
		payload any
	}{
		{"negative t", -1, "E", nil, nil},
		{"NaN t", math.NaN(), "E", nil, nil},
		{"infinite t", math.Inf(1), "E", nil, nil},
		{"empty name", 1, "", nil, nil},
		{"long name", 1, strings.Repeat("x", 257), nil, nil},
		{"control char", 1, "A\x01B", nil, nil},
		{"bad UTF-8", 1, "A\xffB", nil, nil},
		{"negative duration", 1, "E", ptr(-1.0), nil},
		{"array payload", 1, "E", nil, []int{1}},
		{"string payload", 1, "E", nil, "text"},
		{"raw array payload", 1, "E", nil, json.RawMessage(`[1]`)},
		{"raw invalid JSON", 1, "E", nil, json.RawMessage(`{"a":`)},
		{"unencodable payload", 1, "E", nil, map[string]any{"f": func() {}}},
	} {
		if err := op.Emit(tc.t, tc.event, tc.dur, tc.payload); err == nil {
			t.Errorf("%s: Emit succeeded", tc.name)
		}
	}
	if len(*evs) != 0 {
		t.Fatalf("%d invalid events were sent", len(*evs))
	}
	// The op is still usable.
	if err := op.Emit(1, "OK", nil, nil); err != nil || len(*evs) != 1 {
		t.Fatalf("valid Emit after refusals: %v", err)
	}
}

func TestLocalOpStopAndCancel(t *testing.T) {
	op, _, stop, cancel := localOp(t)
	select {
	case <-op.Stopped():
		t.Fatal("stopped before stop")
	default:
	}
	stop()
	stop() // idempotent
	<-op.Stopped()
	if err := op.Emit(1, "AFTER_STOP", nil, nil); err != nil {
		t.Fatalf("Emit after stop (a recording finishing) = %v", err)
	}
	cancel()
	if err := op.Emit(2, "AFTER_CANCEL", nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Emit after cancel = %v", err)
	}
	if op.ID() != "op_local" {
		t.Fatal(op.ID())
	}
	if err := op.SetSummary([]int{1}); err == nil {
		t.Fatal("an array summary was accepted")
	}
}

func TestInlineReplay(t *testing.T) {
	data := []byte(`{"format":"x","inputs":"aabbc"}`)
	r := cappy.InlineReplay(data, "x/v1")
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	got, err := cappy.DecodeInline(r)
	if err != nil || string(got) != string(data) || r.Format != "x/v1" {
		t.Fatalf("DecodeInline = %q, %v", got, err)
	}
	tampered := *r
	tampered.Data = cappy.InlineReplay([]byte("other"), "x/v1").Data
	var f *cappy.Failure
	if _, err := cappy.DecodeInline(&tampered); !errors.As(err, &f) || f.Code != protocol.CappyReplayInvalid {
		t.Fatalf("tampered replay: %v", err)
	}
	big := cappy.InlineReplay(make([]byte, protocol.MaxInlineReplayBytes+1), "x/v1")
	if _, err := cappy.DecodeInline(big); !errors.As(err, &f) || f.Code != protocol.CappyReplayInvalid || !strings.Contains(err.Error(), "1048576") {
		t.Fatalf("oversized replay: %v", err)
	}
	if _, err := cappy.DecodeInline(&protocol.ReplayPayload{Kind: "file"}); err == nil {
		t.Fatal("a file replay decoded inline")
	}
	bad := *r
	bad.Data = "!!!"
	if _, err := cappy.DecodeInline(&bad); err == nil {
		t.Fatal("invalid base64 accepted")
	}
}

func TestFileReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.bin")
	data := []byte(strings.Repeat("replay-data ", 1000))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := cappy.FileReplay(path, "x/v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(); err != nil || r.Bytes != int64(len(data)) || r.Path != path {
		t.Fatalf("FileReplay = %+v, %v", r, err)
	}
	if inl := cappy.InlineReplay(data, "x/v1"); inl.SHA256 != r.SHA256 {
		t.Fatal("file and inline hashes differ")
	}
	got, err := cappy.ReadReplay(r, 0)
	if err != nil || string(got) != string(data) {
		t.Fatalf("ReadReplay: %v", err)
	}
	if _, err := cappy.ReadReplay(r, 10); err == nil {
		t.Fatal("size limit ignored")
	}
	os.WriteFile(path, []byte(strings.Repeat("replay-dat! ", 1000)), 0o600)
	if _, err := cappy.ReadReplay(r, 0); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("changed file: %v", err)
	}
	if _, err := cappy.FileReplay(filepath.Join(t.TempDir(), "missing"), "x"); err == nil {
		t.Fatal("missing file accepted")
	}
}

// benchGame's "bench" scenario emits n tiny events through the cheap path.
type benchGame struct{ n int }

func (g *benchGame) Info() cappy.Info {
	return cappy.Info{Game: protocol.GameInfo{ID: "bench"}, Capabilities: []string{protocol.CapScenarios}}
}
func (g *benchGame) Scenarios() []protocol.Scenario { return []protocol.Scenario{{ID: "bench"}} }
func (g *benchGame) RunScenario(ctx context.Context, op *cappy.Op, _ string, _ map[string]any, _ protocol.Presentation) error {
	buf := make([]byte, 0, 32)
	for i := range g.n {
		buf = append(buf[:0], `{"i":`...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, '}')
		if err := op.Emit(float64(i), "TICK", nil, json.RawMessage(buf)); err != nil {
			return err
		}
	}
	return nil
}
func (g *benchGame) Record(context.Context, *cappy.Op) (*protocol.ReplayPayload, error) {
	return nil, errors.New("no")
}
func (g *benchGame) Replay(context.Context, *cappy.Op, *protocol.ReplayPayload, protocol.Presentation) error {
	return errors.New("no")
}

// BenchmarkEmitLoopback measures Emit throughput through a real loopback
// WebSocket to a minimal reader that discards frames.
func BenchmarkEmitLoopback(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctl, err := cappytest.NewController()
	if err != nil {
		b.Fatal(err)
	}
	defer ctl.Close()
	g := &benchGame{n: b.N}
	runErr := make(chan error, 1)
	go func() { runErr <- cappy.Run(ctx, g, ctl.Options()) }()
	peer, err := ctl.Accept(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := peer.Handshake(ctx, ctl.Token); err != nil {
		b.Fatal(err)
	}
	peer.Send(ctx, []byte(`{"type":"prepare_scenario","op":"op_b","scenario":"bench","parameters":{}}`))
	if _, err := peer.Expect(ctx, "ready", "op_b"); err != nil {
		b.Fatal(err)
	}
	var frames atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	peer.Send(ctx, []byte(`{"type":"start","op":"op_b"}`))
	buf := make([]byte, 4096)
	for {
		_, r, err := peer.Conn.Reader(context.Background()) // no per-read timer
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.ReadFull(r, buf)
		if n < len(buf) && (strings.Contains(string(buf[:n]), `"completed"`) || strings.Contains(string(buf[:n]), `"failed"`)) {
			if !strings.Contains(string(buf[:n]), `"completed"`) {
				b.Fatalf("bench ended with %s", buf[:n])
			}
			break
		}
		frames.Add(1)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if got := frames.Load(); got != int64(b.N)+1 { // + started
		b.Fatalf("%d frames, want %d", got, b.N+1)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	peer.Conn.Close(websocket.StatusNormalClosure, "")
	<-runErr
}
