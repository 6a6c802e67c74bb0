package cappy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func inlineReplay(data []byte) map[string]any {
	return map[string]any{"kind": "inline", "encoding": "base64", "data": base64.StdEncoding.EncodeToString(data), "sha256": sha(data)}
}

func fileReplay(path string, size int64, sum string) map[string]any {
	return map[string]any{"kind": "file", "path": path, "bytes": size, "sha256": sum, "format": "test-file/1"}
}

// payload is n deterministic, non-repeating-looking bytes.
func payload(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed) + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}

// checkStoredReplay checks the content-addressed copy of data: named by
// its sha256 under ReplayDir, read-only, and known to the store.
func checkStoredReplay(t *testing.T, e *env, data []byte, format string) *store.Replay {
	t.Helper()
	sum := sha(data)
	path := filepath.Join(e.replayDir, sum)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("stored replay: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("stored replay content differs (%d bytes, want %d)", len(got), len(data))
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != 0o444 {
		t.Fatalf("stored replay mode %v, want -r--r--r--", fi.Mode())
	}
	r, err := e.st.Replay(context.Background(), sum)
	if err != nil {
		t.Fatalf("store.Replay: %v", err)
	}
	if r.SHA256 != sum || r.Bytes != int64(len(data)) || r.Path != path || r.Format != format || r.CreatedAt.IsZero() {
		t.Fatalf("store.Replay = %+v", r)
	}
	checkNoTemps(t, e)
	return r
}

// checkNoTemps fails if the replay directory holds anything but replays.
func checkNoTemps(t *testing.T, e *env) {
	t.Helper()
	ents, _ := os.ReadDir(e.replayDir)
	for _, ent := range ents {
		if len(ent.Name()) != 64 {
			t.Fatalf("replay dir holds %q", ent.Name())
		}
	}
}

// checkNotStored fails if a replay with this hash was stored.
func checkNotStored(t *testing.T, e *env, sum string) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(e.replayDir, sum)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("replay %s is in the replay dir (%v)", sum, err)
	}
	if r, err := e.st.Replay(context.Background(), sum); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("store.Replay(%s) = %+v, %v; want not found", sum, r, err)
	}
	checkNoTemps(t, e)
}

// recording runs a freeform recording to the point where it completes
// with the given replay, and returns the operation.
func recording(t *testing.T, e *env, a *testAdapter, replay map[string]any) *Operation {
	t.Helper()
	o := start(t, e, Request{Kind: KindRecording})
	a.expect(t, "record_start")
	a.send(t, map[string]any{"type": "started", "op": o.ID})
	a.send(t, map[string]any{"type": "event", "op": o.ID, "t": 0, "event": "INPUT"})
	waitStatus(t, o, StatusRunning)
	if err := e.ctrl.Stop(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	a.expect(t, "stop")
	a.send(t, map[string]any{"type": "completed", "op": o.ID, "replay": replay})
	return o
}

func TestInlineReplayStored(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	data := payload(64<<10, 1)
	o := recording(t, e, a, inlineReplay(data))
	out := wantOutcome(t, e, o, StatusCompleted, "")
	r := checkStoredReplay(t, e, data, "")
	if out.Replay == nil || out.Replay.SHA256 != r.SHA256 || out.Replay.Path != r.Path || out.Replay.Bytes != r.Bytes {
		t.Fatalf("outcome replay %+v, stored %+v", out.Replay, r)
	}
	// The same replay again (content-addressed): stored once, still fine.
	rp := inlineReplay(data)
	rp["sha256"] = strings.ToUpper(sha(data))
	o2 := recording(t, e, a, rp)
	if out := wantOutcome(t, e, o2, StatusCompleted, ""); out.Replay == nil || out.Replay.SHA256 != sha(data) {
		t.Fatalf("second recording: %+v", out.Replay)
	}
	checkStoredReplay(t, e, data, "")
}

func TestInlineReplayInvalid(t *testing.T) {
	data := []byte("the real replay")
	big := payload(protocol.MaxInlineReplayBytes+1, 2)
	cases := []struct {
		name   string
		replay map[string]any
		claim  string
	}{
		{"sha256 of other data", func() map[string]any { r := inlineReplay(data); r["sha256"] = sha([]byte("other")); return r }(), sha([]byte("other"))},
		{"sha256 off by one digit", func() map[string]any {
			r := inlineReplay(data)
			s := []byte(sha(data))
			s[10] = "0123456789abcdef"[(strings.IndexByte("0123456789abcdef", s[10])+1)%16]
			r["sha256"] = string(s)
			return r
		}(), ""},
		{"not base64", func() map[string]any { r := inlineReplay(data); r["data"] = "!!not base64!!"; return r }(), sha(data)},
		{"over 1 MiB decoded", inlineReplay(big), sha(big)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			a := connect(t, e, allCaps...)
			o := recording(t, e, a, tc.replay)
			out := wantOutcome(t, e, o, StatusFailed, protocol.CappyReplayInvalid)
			if out.Replay != nil {
				t.Fatalf("failed recording carries a replay %+v", out.Replay)
			}
			if c, _ := e.st.Capture(context.Background(), o.ID); c.ReplaySHA != "" {
				t.Fatalf("failed recording's capture has replay %s", c.ReplaySHA)
			}
			claim := tc.claim
			if claim == "" {
				claim = tc.replay["sha256"].(string)
			}
			checkNotStored(t, e, claim)
			checkNotStored(t, e, sha(data))
			completeScenario(t, e, a)
		})
	}
}

// adapterFile writes the adapter's own replay file with mode 0640.
func adapterFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o640); err != nil { // whatever the umask
		t.Fatal(err)
	}
	return p
}

// checkUntouched checks the adapter's file is as it wrote it.
func checkUntouched(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatalf("the adapter's file %s: %v", path, err)
	}
	if fi.Mode() != osMode(mode) {
		t.Fatalf("the adapter's file %s: mode %v, want %v", path, fi.Mode(), osMode(mode))
	}
	if fi.Mode().IsRegular() {
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("the adapter's file %s was modified (%d bytes, %v)", path, len(got), err)
		}
	}
}

func TestFileReplayStored(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	dir := t.TempDir()
	data := payload(protocol.MaxInlineReplayBytes+12345, 3) // larger than inline allows
	p := adapterFile(t, dir, "rec.bin", data)
	o := recording(t, e, a, fileReplay(p, int64(len(data)), sha(data)))
	out := wantOutcome(t, e, o, StatusCompleted, "")
	r := checkStoredReplay(t, e, data, "test-file/1")
	if out.Replay == nil || out.Replay.SHA256 != r.SHA256 {
		t.Fatalf("outcome replay %+v", out.Replay)
	}
	if c, _ := e.st.Capture(context.Background(), o.ID); c.ReplaySHA != sha(data) {
		t.Fatalf("capture replay %q", c.ReplaySHA)
	}
	checkUntouched(t, p, data, 0o640)
	// A store copy is not the adapter's file.
	if r.Path == p {
		t.Fatal("the store points at the adapter's own file")
	}
}

func TestFileReplayInvalid(t *testing.T) {
	data := payload(100_000, 4)
	other := payload(100_000, 5) // same size, other content
	type setup struct {
		path   string
		replay map[string]any
		claim  string           // the hash the adapter claimed
		check  func(*testing.T) // the adapter's files are untouched
	}
	cases := []struct {
		name string
		make func(t *testing.T, dir string) setup
	}{
		{"size larger than the file", func(t *testing.T, dir string) setup {
			p := adapterFile(t, dir, "rec.bin", data)
			return setup{p, fileReplay(p, int64(len(data))+1, sha(data)), sha(data), func(t *testing.T) { checkUntouched(t, p, data, 0o640) }}
		}},
		{"size smaller than the file", func(t *testing.T, dir string) setup {
			p := adapterFile(t, dir, "rec.bin", data)
			return setup{p, fileReplay(p, int64(len(data))-1, sha(data[:len(data)-1])), sha(data[:len(data)-1]), func(t *testing.T) { checkUntouched(t, p, data, 0o640) }}
		}},
		{"hash differs", func(t *testing.T, dir string) setup {
			p := adapterFile(t, dir, "rec.bin", data)
			return setup{p, fileReplay(p, int64(len(data)), sha(other)), sha(other), func(t *testing.T) { checkUntouched(t, p, data, 0o640) }}
		}},
		{"read-only file, hash differs", func(t *testing.T, dir string) setup {
			p := adapterFile(t, dir, "rec.bin", data)
			os.Chmod(p, 0o400)
			return setup{p, fileReplay(p, int64(len(data)), sha(other)), sha(other), func(t *testing.T) { checkUntouched(t, p, data, 0o400) }}
		}},
		{"symlink", func(t *testing.T, dir string) setup {
			target := adapterFile(t, dir, "real.bin", data)
			link := filepath.Join(dir, "link.bin")
			if err := os.Symlink(target, link); err != nil {
				t.Skipf("symlink: %v", err)
			}
			if _, err := os.Lstat(link); err != nil {
				sysdeps.SkipUnderWine(t, "os.Symlink returns no error but makes no link")
			}
			return setup{link, fileReplay(link, int64(len(data)), sha(data)), sha(data), func(t *testing.T) {
				checkUntouched(t, target, data, 0o640)
				if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
					t.Fatalf("the adapter's symlink: %v %v", fi, err)
				}
			}}
		}},
		{"symlinked directory", func(t *testing.T, dir string) setup {
			// The file itself is regular; a directory on its path is a
			// symlink. Following it reads a file the adapter named, which
			// is acceptable; what matters is that nothing is modified.
			real := filepath.Join(dir, "real")
			os.Mkdir(real, 0o755)
			p := adapterFile(t, real, "rec.bin", data)
			if err := os.Symlink(real, filepath.Join(dir, "via")); err != nil {
				t.Skipf("symlink: %v", err)
			}
			via := filepath.Join(dir, "via", "rec.bin")
			return setup{via, fileReplay(via, int64(len(data)), sha(other)), sha(other), func(t *testing.T) { checkUntouched(t, p, data, 0o640) }}
		}},
		{"missing file", func(t *testing.T, dir string) setup {
			p := filepath.Join(dir, "nope.bin")
			return setup{p, fileReplay(p, int64(len(data)), sha(data)), sha(data), func(t *testing.T) {
				if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("the controller created %s", p)
				}
			}}
		}},
		{"a directory", func(t *testing.T, dir string) setup {
			p := filepath.Join(dir, "d")
			os.Mkdir(p, 0o755)
			return setup{p, fileReplay(p, 4096, sha(data)), sha(data), func(t *testing.T) {}}
		}},
		{"relative path", func(t *testing.T, dir string) setup {
			return setup{"rec.bin", fileReplay("rec.bin", int64(len(data)), sha(data)), sha(data), func(t *testing.T) {}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			a := connect(t, e, allCaps...)
			s := tc.make(t, t.TempDir())
			o := recording(t, e, a, s.replay)
			out := wantOutcome(t, e, o, StatusFailed, protocol.CappyReplayInvalid)
			if !strings.Contains(out.Message, "replay") {
				t.Errorf("message %q", out.Message)
			}
			s.check(t)
			checkNotStored(t, e, s.claim)
			checkNotStored(t, e, sha(data))
			completeScenario(t, e, a)
		})
	}
}

// A file that claims the hash of a replay already in the store, but holds
// other bytes, is refused; the stored replay stays as it was.
func TestFileReplayClaimingStoredHash(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	dir := t.TempDir()
	good := payload(5000, 6)
	o := recording(t, e, a, inlineReplay(good))
	wantOutcome(t, e, o, StatusCompleted, "")
	checkStoredReplay(t, e, good, "")

	forged := payload(5000, 7)
	p := adapterFile(t, dir, "forged.bin", forged)
	o2 := recording(t, e, a, fileReplay(p, int64(len(forged)), sha(good)))
	wantOutcome(t, e, o2, StatusFailed, protocol.CappyReplayInvalid)
	checkUntouched(t, p, forged, 0o640)
	checkStoredReplay(t, e, good, "")

	// The honest file of the same content is accepted (already stored).
	p2 := adapterFile(t, dir, "same.bin", good)
	o3 := recording(t, e, a, fileReplay(p2, int64(len(good)), sha(good)))
	if out := wantOutcome(t, e, o3, StatusCompleted, ""); out.Replay == nil || out.Replay.SHA256 != sha(good) {
		t.Fatalf("replay %+v", out.Replay)
	}
	checkUntouched(t, p2, good, 0o640)
}

func TestReplayOperation(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	data := []byte("inputs: left, left, jump")
	rp := inlineReplay(data)
	rp["format"] = "test-inputs/1"
	rec := recording(t, e, a, rp)
	wantOutcome(t, e, rec, StatusCompleted, "")
	stored, err := e.st.Replay(context.Background(), sha(data))
	if err != nil {
		t.Fatal(err)
	}

	o := start(t, e, Request{Kind: KindReplay, Replay: stored, ReplayOf: rec.ID, Presentation: protocol.Presentation{"timeScale": 2.0}})
	p := a.expect(t, "prepare_replay")
	if p.str("op") != o.ID {
		t.Fatalf("prepare_replay %s", p.Raw)
	}
	got := p.M["replay"].(map[string]any)
	want := map[string]any{"kind": "inline", "encoding": "base64", "data": base64.StdEncoding.EncodeToString(data), "sha256": sha(data), "format": "test-inputs/1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("prepare_replay replay %v\nwant %v", got, want)
	}
	if ts := p.M["presentation"].(map[string]any)["timeScale"]; ts != 2.0 {
		t.Fatalf("presentation %s", p.Raw)
	}
	a.send(t, map[string]any{"type": "ready", "op": o.ID})
	a.expect(t, "start")
	a.send(t, map[string]any{"type": "started", "op": o.ID})
	for i := 0; i < 3; i++ {
		a.send(t, map[string]any{"type": "event", "op": o.ID, "t": i * 100, "event": "INPUT", "payload": map[string]any{"simT": i * 50}})
	}
	waitStatus(t, o, StatusRunning)
	if err := e.ctrl.Stop(context.Background(), o); err != nil { // a replay can be stopped
		t.Fatal(err)
	}
	a.expect(t, "stop")
	a.send(t, map[string]any{"type": "completed", "op": o.ID})
	out := wantOutcome(t, e, o, StatusCompleted, "")
	if out.Events != 3 || out.Kind != KindReplay || out.TimeScale != 2 {
		t.Fatalf("outcome %+v", out)
	}
	c, _ := e.st.Capture(context.Background(), o.ID)
	if c.Kind != KindReplay || c.ReplaySHA != sha(data) || c.ReplayOf != rec.ID || c.Events != 3 {
		t.Fatalf("capture %+v", c)
	}
}

// A replay too large to inline is sent as the store's read-only file.
func TestReplayOperationLargeAsFile(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	data := payload(protocol.MaxInlineReplayBytes+1, 8)
	p := adapterFile(t, t.TempDir(), "big.bin", data)
	rec := recording(t, e, a, fileReplay(p, int64(len(data)), sha(data)))
	wantOutcome(t, e, rec, StatusCompleted, "")
	stored := checkStoredReplay(t, e, data, "test-file/1")

	o := start(t, e, Request{Kind: KindReplay, Replay: stored})
	m := a.expect(t, "prepare_replay")
	got := m.M["replay"].(map[string]any)
	if got["kind"] != "file" || got["path"] != stored.Path || got["bytes"] != float64(len(data)) || got["sha256"] != sha(data) || got["data"] != nil {
		t.Fatalf("prepare_replay %v", got)
	}
	a.send(t, map[string]any{"type": "ready", "op": o.ID})
	a.expect(t, "start")
	a.send(t, map[string]any{"type": "started", "op": o.ID})
	a.send(t, map[string]any{"type": "completed", "op": o.ID})
	wantOutcome(t, e, o, StatusCompleted, "")
}

func TestReplayStartRefused(t *testing.T) {
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	startErr(t, e, Request{Kind: KindReplay}, protocol.CappyReplayInvalid)
	data := []byte("replay to corrupt")
	wantOutcome(t, e, recording(t, e, a, inlineReplay(data)), StatusCompleted, "")
	stored := checkStoredReplay(t, e, data, "")
	os.Chmod(stored.Path, 0o644)
	os.WriteFile(stored.Path, []byte("replay to corrupX"), 0o644)
	startErr(t, e, Request{Kind: KindReplay, Replay: stored}, protocol.CappyReplayInvalid)
	gone := *stored
	gone.Path = filepath.Join(t.TempDir(), "missing")
	startErr(t, e, Request{Kind: KindReplay, Replay: &gone}, protocol.CappyReplayInvalid)
	// Nothing was sent for the refused ones.
	o := start(t, e, scenarioReq())
	if m := a.next(t); m.str("op") != o.ID {
		t.Fatalf("adapter got %s", m.Raw)
	}
}

// ---- many events ----

func TestManyEvents(t *testing.T) {
	const n = 20000
	e := newEnv(t, nil)
	a := connect(t, e, allCaps...)
	o := runningScenario(t, e, a)
	var seen int
	stop := o.Listen(func(store.CaptureEvent) { seen++ }) // called on the reader goroutine
	sent := make(chan error, 1)
	go func() {
		ctx := context.Background()
		for i := 1; i <= n; i++ {
			b := fmt.Appendf(nil, `{"type":"event","op":%q,"t":%d,"event":"E%d","payload":{"i":%d}}`, o.ID, i/3, i%7, i)
			if err := a.ws.Write(ctx, websocket.MessageText, b); err != nil {
				sent <- err
				return
			}
		}
		sent <- a.ws.Write(ctx, websocket.MessageText, mustJSON(map[string]any{"type": "completed", "op": o.ID}))
	}()
	if err := <-sent; err != nil {
		t.Fatalf("adapter write: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*wait)
	defer cancel()
	out := o.Wait(ctx)
	stop()
	if out.Status != StatusCompleted || out.Events != n || out.LastT != float64(n/3) {
		t.Fatalf("outcome %+v", out)
	}
	if seen != n {
		t.Fatalf("listener saw %d events", seen)
	}
	c, err := e.st.Capture(context.Background(), o.ID)
	if err != nil || c.Events != n || c.LastT != float64(n/3) {
		t.Fatalf("capture %+v %v", c, err)
	}
	var after int64
	var pages int
	for {
		evs, err := e.st.Events(context.Background(), store.EventQuery{Op: o.ID, AfterSeq: after, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		pages++
		for _, ev := range evs {
			i := after + 1
			if ev.Seq != i || ev.T != float64(i/3) || ev.Event != fmt.Sprintf("E%d", i%7) || string(ev.Payload) != fmt.Sprintf(`{"i":%d}`, i) {
				t.Fatalf("event after seq %d: %+v (payload %s)", after, ev, ev.Payload)
			}
			after = ev.Seq
		}
	}
	if after != n || pages != n/1000 {
		t.Fatalf("read %d events in %d pages, want %d", after, pages, n)
	}
	completeScenario(t, e, a)
}

// ---- replay size and the reader's pauses ----

// A replay over MaxReplayBytes fails the recording before anything is read
// or copied; one at the limit is stored.
func TestReplayOverMaxReplayBytes(t *testing.T) {
	const limit = 100_000
	e := newEnv(t, func(c *Config) { c.MaxReplayBytes = limit })
	a := connect(t, e, allCaps...)
	dir := t.TempDir()

	big := payload(limit+1, 9)
	p := adapterFile(t, dir, "big.bin", big)
	os.Chmod(p, 0o000) // not even opened: the size the adapter states is refused first
	o := recording(t, e, a, fileReplay(p, int64(len(big)), sha(big)))
	out := wantOutcome(t, e, o, StatusFailed, protocol.CappyReplayInvalid)
	if !strings.Contains(out.Message, fmt.Sprint(limit)) || strings.Contains(out.Message, "permission") {
		t.Fatalf("message %q: want the limit named, and no attempt to read the file", out.Message)
	}
	checkUntouched(t, p, big, 0o000)
	checkNotStored(t, e, sha(big))

	rp := inlineReplay(payload(limit+1, 10)) // inline, still over a limit below 1 MiB
	o = recording(t, e, a, rp)
	wantOutcome(t, e, o, StatusFailed, protocol.CappyReplayInvalid)
	checkNotStored(t, e, rp["sha256"].(string))

	exact := payload(limit, 11)
	p2 := adapterFile(t, dir, "exact.bin", exact)
	o = recording(t, e, a, fileReplay(p2, int64(len(exact)), sha(exact)))
	wantOutcome(t, e, o, StatusCompleted, "")
	checkStoredReplay(t, e, exact, "test-file/1")
}

func TestMaxReplayBytesDefault(t *testing.T) {
	e := newEnv(t, nil)
	if got := e.ctrl.cfg.MaxReplayBytes; got != DefaultMaxReplayBytes || DefaultMaxReplayBytes != 1<<30 {
		t.Fatalf("MaxReplayBytes %d, want 1 GiB", got)
	}
}

// Storing a replay keeps the reader from reading pongs; however long it
// takes, the adapter is not unresponsive for it. The store is held up
// until the pinger has checked well past PongTimeout.
func TestStoringReplayIsNotUnresponsiveness(t *testing.T) {
	const pongTimeout = 300 * time.Millisecond
	var ctrl atomic.Pointer[Controller]
	var op atomic.Pointer[Operation]
	held := make(chan struct{})
	e := newEnv(t, func(c *Config) {
		c.PingEvery, c.PongTimeout = 10*time.Millisecond, pongTimeout
		c.hooks.storingReplay = func() {
			defer close(held)
			ctl, o := ctrl.Load(), op.Load()
			ctl.mu.Lock()
			conn := ctl.conn
			ctl.mu.Unlock()
			start := time.Now()
			var base int64 = -1
			for {
				select {
				case <-o.Done(): // dropped as unresponsive meanwhile
					return
				default:
				}
				// Two pings sent after PongTimeout went by: the pinger
				// checked the adapter's silence then and kept it.
				if base < 0 && time.Since(start) > 2*pongTimeout {
					base = conn.pinged.Load()
				}
				if base >= 0 && conn.pinged.Load() >= base+2 {
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	})
	ctrl.Store(e.ctrl)
	a := connect(t, e, allCaps...)
	o := start(t, e, Request{Kind: KindRecording})
	op.Store(o)
	a.expect(t, "record_start")
	a.send(t, map[string]any{"type": "started", "op": o.ID})
	waitStatus(t, o, StatusRunning)
	data := payload(2<<20, 12)
	p := adapterFile(t, t.TempDir(), "rec.bin", data)
	a.send(t, map[string]any{"type": "completed", "op": o.ID, "replay": fileReplay(p, int64(len(data)), sha(data))})
	<-held
	ctx, cancel := context.WithTimeout(context.Background(), 4*wait)
	defer cancel()
	if out := o.Wait(ctx); out.Status != StatusCompleted {
		t.Fatalf("outcome %s/%s (%s), want completed: storing the replay counted as the adapter's silence", out.Status, out.Code, out.Message)
	}
	wantOutcome(t, e, o, StatusCompleted, "")
	checkStoredReplay(t, e, data, "test-file/1")
	// The adapter stays connected and works.
	if a.isClosed() {
		t.Fatal("the adapter was dropped")
	}
	completeScenario(t, e, a)
}

// osMode is mode as the OS keeps it: Windows keeps only whether a file is
// read-only, which it shows as 0o444 (else 0o666).
func osMode(mode os.FileMode) os.FileMode {
	if runtime.GOOS != "windows" || mode&os.ModeType != 0 {
		return mode
	}
	if mode&0o200 != 0 {
		return mode&^os.ModePerm | 0o666
	}
	return mode&^os.ModePerm | 0o444
}
