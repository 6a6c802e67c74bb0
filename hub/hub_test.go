package hub_test

// These tests drive the coordination service only through its real HTTP and
// WebSocket API: a hub.Server serving on a loopback listener over a SQLite
// file in t.TempDir(), with github.com/coder/websocket as the client.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
	"github.com/crosscode/crosscode-mcp/internal/testing/pgtest"
	"github.com/crosscode/crosscode-mcp/pgstore"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

const (
	wsMain  = "mygame"
	wsOther = "other"
)

// The suite runs on the SQLite store, and on PostgreSQL (a throwaway
// cluster of internal/testing/pgtest) with CROSSCODE_HUB_TEST_STORE=postgres:
// scripts/test runs it both ways.
var onPostgres = os.Getenv("CROSSCODE_HUB_TEST_STORE") == "postgres"

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// testStore is the service's database, of either kind.
type testStore interface {
	hub.Store
	CreateToken(ctx context.Context, workspace, plan string) (string, error)
	Close() error
}

// sqliteOnly skips a test of a SQLite feature in the PostgreSQL pass.
func sqliteOnly(t testing.TB) {
	if onPostgres {
		t.Skip("a feature of the SQLite store (the PostgreSQL pass runs the rest of the suite)")
	}
}

// testHub is one running service and what a client needs to reach it.
type testHub struct {
	URL    string // http://127.0.0.1:PORT
	Store  testStore
	Path   string // the database: a SQLite file, or a PostgreSQL URL
	Token  string // a token of wsMain
	Other  string // a token of wsOther
	client *http.Client
	stop   func() error // cancels Serve's context and waits for it to return
	wrap   []func(net.Listener) net.Listener
}

// openStore opens the database at path, of the suite's kind.
func openStore(t testing.TB, path string) testStore {
	t.Helper()
	var st testStore
	var err error
	if onPostgres {
		st, err = pgstore.Open(context.Background(), path, &pgstore.Options{Migrate: true})
	} else {
		st, err = store.Open(context.Background(), path, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// reopen closes h.Store and opens the database anew; Serve must have returned.
func (h *testHub) reopen(t testing.TB) {
	t.Helper()
	if err := h.Store.Close(); err != nil {
		t.Fatal(err)
	}
	h.Store = openStore(t, h.Path)
}

// newHub opens a store (a file in a temp dir, or a fresh PostgreSQL
// database), creates a token for wsMain and one for wsOther, and serves
// cfg over it on a loopback listener until the test ends.
func newHub(t testing.TB, cfg hub.Config, wrap ...func(net.Listener) net.Listener) *testHub {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hub.db")
	if onPostgres {
		path = pgtest.NewDB(t)
	}
	st := openStore(t, path)
	h := &testHub{Store: st, Path: path}
	t.Cleanup(func() { h.Store.Close() })
	var err error
	if h.Token, err = st.CreateToken(context.Background(), wsMain, ""); err != nil {
		t.Fatal(err)
	}
	if h.Other, err = st.CreateToken(context.Background(), wsOther, ""); err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConns: 128, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
	h.client = &http.Client{Transport: tr, Timeout: 30 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	h.wrap = wrap
	h.serve(t, cfg)
	return h
}

// serve starts a hub.Server over h.Store (stopping none that runs).
func (h *testHub) serve(t testing.TB, cfg hub.Config) {
	t.Helper()
	cfg.Store = h.Store
	srv := hub.New(cfg)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.URL = "http://" + l.Addr().String()
	for _, w := range h.wrap {
		l = w(l)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	var once sync.Once
	var serveErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case serveErr = <-done:
			case <-time.After(30 * time.Second):
				serveErr = errors.New("Serve did not return within 30s after its context ended")
			}
		})
		return serveErr
	}
	h.stop = stop
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

// answer is one HTTP answer.
type answer struct {
	Status int
	Header http.Header
	Body   []byte
}

func (a *answer) String() string { return fmt.Sprintf("%d %s", a.Status, bytes.TrimSpace(a.Body)) }

// do sends one request; it never fails the test, so goroutines may use it.
func (h *testHub) do(method, path, token string, body io.Reader) (*answer, error) {
	req, err := http.NewRequest(method, h.URL+path, body)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &answer{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

func (h *testHub) mustDo(t testing.TB, method, path, token string, body []byte) *answer {
	t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	a, err := h.do(method, path, token, r)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return a
}

func ingestBody(t testing.TB, e *protocol.Envelope) []byte {
	t.Helper()
	b, err := json.Marshal(protocol.IngestRequest{Envelope: e})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ingestPath(e *protocol.Envelope) string { return "/v1/" + e.Type.Kind().Collection() }

// post sends e to its endpoint with token and returns the answer.
func (h *testHub) post(t testing.TB, token string, e *protocol.Envelope) *answer {
	t.Helper()
	return h.mustDo(t, "POST", ingestPath(e), token, ingestBody(t, e))
}

// ingest posts e with the wsMain token and wants a 200 receipt.
func (h *testHub) ingest(t testing.TB, e *protocol.Envelope) protocol.IngestReceipt {
	t.Helper()
	a := h.post(t, h.Token, e)
	if a.Status != http.StatusOK {
		t.Fatalf("POST %s %s/%d: %s", ingestPath(e), e.ReplicaID, e.ClientSequence, a)
	}
	return decodeReceipt(t, a)
}

// decodeReceipt strictly decodes a 200 ingest answer.
func decodeReceipt(t testing.TB, a *answer) protocol.IngestReceipt {
	t.Helper()
	wantJSON(t, a)
	wantKeys(t, a.Body, "duplicate", "id", "ingestedAt", "serverSequence")
	var r protocol.IngestReceipt
	if err := strictUnmarshal(a.Body, &r); err != nil {
		t.Fatalf("receipt %s: %v", a.Body, err)
	}
	if r.ID == "" || r.ServerSequence < 1 || r.IngestedAt.IsZero() {
		t.Fatalf("incomplete receipt %s", a.Body)
	}
	return r
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

func wantJSON(t testing.TB, a *answer) {
	t.Helper()
	if ct := a.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want application/json (answer %s)", ct, a)
	}
}

// wantKeys checks that the JSON object b has exactly the keys want.
func wantKeys(t testing.TB, b []byte, want ...string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, b)
	}
	got := make([]string, 0, len(m))
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v in %s", got, want, b)
	}
}

// wantError checks an error answer: status, JSON content type, the exact
// {"error":{"code","message"}} shape, the code and a non-empty message,
// which it returns.
func wantError(t testing.TB, a *answer, status int, code protocol.ErrorCode) string {
	t.Helper()
	if a.Status != status {
		t.Fatalf("status %d, want %d %s: %s", a.Status, status, code, a)
	}
	wantJSON(t, a)
	var body struct {
		Error struct {
			Code    protocol.ErrorCode `json:"code"`
			Message string             `json:"message"`
		} `json:"error"`
	}
	if err := strictUnmarshal(a.Body, &body); err != nil {
		t.Fatalf("error body %s: %v", a.Body, err)
	}
	wantKeys(t, a.Body, "error")
	if body.Error.Code != code || body.Error.Message == "" {
		t.Fatalf("error %s, want code %s and a message", a.Body, code)
	}
	return body.Error.Message
}

// page reads one version-2 page (or cursor-too-old answer).
func (h *testHub) page(t testing.TB, token, path string, after int64, limit int) *protocol.PageResponse {
	t.Helper()
	q := url.Values{"afterSequence": {fmt.Sprint(after)}, "protocolVersion": {"2"}}
	if limit > 0 {
		q.Set("limit", fmt.Sprint(limit))
	}
	a := h.mustDo(t, "GET", path+"?"+q.Encode(), token, nil)
	if a.Status != http.StatusOK {
		t.Fatalf("GET %s after %d: %s", path, after, a)
	}
	wantJSON(t, a)
	p, err := protocol.DecodePageResponse(a.Body)
	if err != nil {
		t.Fatalf("GET %s after %d: %v: %s", path, after, err, a.Body)
	}
	return p
}

// readAll pages path from after to its end with version-2 pages, checking
// every page's shape, and returns the items.
func (h *testHub) readAll(t testing.TB, token, path string, after int64) []*protocol.Envelope {
	t.Helper()
	var out []*protocol.Envelope
	for {
		p := h.page(t, token, path, after, store.MaxPageLimit)
		if p.Page == nil {
			t.Fatalf("GET %s after %d: cursor too old: %+v", path, after, p.TooOld)
		}
		pg := p.Page
		if pg.Status != protocol.StatusOK || pg.ProtocolVersion != 2 {
			t.Fatalf("page status %q version %d", pg.Status, pg.ProtocolVersion)
		}
		for _, e := range pg.Items {
			if e.ServerSequence <= after || e.IngestedAt == nil {
				t.Fatalf("GET %s after %d: item %s at %d (ingestedAt %v)", path, after, e.ID, e.ServerSequence, e.IngestedAt)
			}
			after = e.ServerSequence
			out = append(out, e)
		}
		if pg.NextCursor != after {
			t.Fatalf("nextCursor %d, want %d (the last item's serverSequence)", pg.NextCursor, after)
		}
		if !pg.HasMore {
			return out
		}
		if len(pg.Items) == 0 {
			t.Fatal("empty page with hasMore")
		}
	}
}

// wantGapFree checks that log holds serverSequence 1..n in order, each
// (replicaId, clientSequence) once.
func wantGapFree(t testing.TB, log []*protocol.Envelope, n int64) {
	t.Helper()
	if int64(len(log)) != n {
		t.Fatalf("log has %d operations, want %d", len(log), n)
	}
	seen := map[string]int64{}
	for i, e := range log {
		if e.ServerSequence != int64(i+1) {
			t.Fatalf("log[%d] has serverSequence %d: not gap-free", i, e.ServerSequence)
		}
		k := fmt.Sprintf("%s/%d", e.ReplicaID, e.ClientSequence)
		if s, dup := seen[k]; dup {
			t.Fatalf("%s logged twice: at %d and %d", k, s, e.ServerSequence)
		}
		seen[k] = e.ServerSequence
	}
}

// clone deep-copies an envelope through JSON.
func clone(t testing.TB, e *protocol.Envelope) *protocol.Envelope {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	c, err := protocol.DecodeEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func canonical(t testing.TB, e *protocol.Envelope) string {
	t.Helper()
	b, err := e.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// --- ingest ---------------------------------------------------------------

func TestIngestEveryEndpoint(t *testing.T) {
	h := newHub(t, hub.Config{})
	a := fixture.NewReplica(wsMain, "rep_a", "ada@example.com")
	b := fixture.NewReplica(wsMain, "rep_b", "bo@example.com")
	sent := []*protocol.Envelope{
		a.Transaction("txn_1", "src/game/boss.gd"),
		b.Task("tsk_1", protocol.TaskOpen, false),
		a.Claim("clm_1", true, "src/game/**"),
		a.Handoff("hof_1", "bo@example.com", []string{"clm_1"}, ""),
		b.Intent("int_1", "assets/boss/**"),
		b.Validation("val_1", protocol.ValidationPassed),
		// The events that change an entity share its id.
		b.Task("tsk_1", protocol.TaskInProgress, true),
		b.Handoff("hof_1", "", nil, protocol.HandoffAccepted),
		a.Release("clm_1", "src/game/**"),
	}
	seenPaths := map[string]bool{}
	var receipts []protocol.IngestReceipt
	var last time.Time
	for i, e := range sent {
		seenPaths[ingestPath(e)] = true
		r := h.ingest(t, e)
		if r.ID != e.ID || r.ServerSequence != int64(i+1) || r.Duplicate {
			t.Fatalf("%s: receipt %+v, want id %s serverSequence %d duplicate false", e.Type, r, e.ID, i+1)
		}
		if r.IngestedAt.Before(last) {
			t.Fatalf("ingestedAt went back: %v after %v", r.IngestedAt, last)
		}
		last = r.IngestedAt
		receipts = append(receipts, r)
	}
	for _, k := range protocol.Kinds {
		if !seenPaths["/v1/"+k.Collection()] {
			t.Fatalf("endpoint /v1/%s not exercised", k.Collection())
		}
	}
	log := h.readAll(t, h.Token, "/v1/events", 0)
	wantGapFree(t, log, int64(len(sent)))
	for i, e := range log {
		if got, want := canonical(t, e), canonical(t, sent[i]); got != want {
			t.Fatalf("logged %d differs from what was sent:\n got %s\nwant %s", i+1, got, want)
		}
		if !e.IngestedAt.Equal(receipts[i].IngestedAt) {
			t.Fatalf("logged %d ingestedAt %v, receipt said %v", i+1, e.IngestedAt, receipts[i].IngestedAt)
		}
	}
}

func TestIngestRules(t *testing.T) {
	h := newHub(t, hub.Config{})
	a := fixture.NewReplica(wsMain, "rep_a", "ada@example.com")
	b := fixture.NewReplica(wsMain, "rep_b", "bo@example.com")

	intent := a.Intent("int_1", "src/**")
	body := ingestBody(t, intent)
	first := h.mustDo(t, "POST", "/v1/intents", h.Token, body)
	r1 := decodeReceipt(t, first)
	if r1.ServerSequence != 1 || r1.Duplicate {
		t.Fatalf("first receipt %+v", r1)
	}
	task := b.Task("tsk_1", protocol.TaskOpen, false)
	if r := h.ingest(t, task); r.ServerSequence != 2 {
		t.Fatalf("second receipt %+v", r)
	}

	// 1. Identical re-POST: the original receipt, marked duplicate, twice over.
	for range 2 {
		dup := decodeReceipt(t, h.mustDo(t, "POST", "/v1/intents", h.Token, body))
		if !dup.Duplicate || dup.ID != r1.ID || dup.ServerSequence != r1.ServerSequence || !dup.IngestedAt.Equal(r1.IngestedAt) {
			t.Fatalf("duplicate receipt %+v, want %+v with duplicate", dup, r1)
		}
	}
	// Same replicaId, clientSequence and id, other content.
	changed := clone(t, intent)
	changed.Intent().Summary = "something else"
	wantError(t, h.post(t, h.Token, changed), http.StatusConflict, protocol.CodeIDConflict)
	// Same replicaId and clientSequence, another id.
	otherID := clone(t, intent)
	otherID.ID, otherID.Intent().ID = "int_2", "int_2"
	wantError(t, h.post(t, h.Token, otherID), http.StatusConflict, protocol.CodeClientSequenceRegression)
	// Same replicaId and clientSequence, another id and another kind.
	b.Next = task.ClientSequence
	wantError(t, h.post(t, h.Token, b.Intent("int_3", "docs/**")), http.StatusConflict, protocol.CodeClientSequenceRegression)

	// 2. A clientSequence not above the replica's highest.
	a.Next = 10
	if r := h.ingest(t, a.Claim("clm_1", true, "src/**")); r.ServerSequence != 3 {
		t.Fatalf("receipt %+v", r)
	}
	a.Next = 5 // never used, but below 10
	wantError(t, h.post(t, h.Token, a.Intent("int_4", "docs/**")), http.StatusConflict, protocol.CodeClientSequenceRegression)
	a.Next = 0
	wantError(t, h.post(t, h.Token, a.Intent("int_5", "docs/**")), http.StatusConflict, protocol.CodeClientSequenceRegression)
	a.Next = 11

	// 3. Opening events need a new id, of any kind.
	msg := wantError(t, h.post(t, h.Token, a.Intent("int_1", "docs/**")), http.StatusConflict, protocol.CodeIDConflict)
	if !strings.Contains(msg, "int_1") {
		t.Errorf("ID_CONFLICT message does not name the id: %q", msg)
	}
	wantError(t, h.post(t, h.Token, a.Task("clm_1", protocol.TaskOpen, false)), http.StatusConflict, protocol.CodeIDConflict)
	wantError(t, h.post(t, h.Token, a.Claim("tsk_1", false, "x/**")), http.StatusConflict, protocol.CodeIDConflict)
	// Changing events need an existing entity of their kind.
	wantError(t, h.post(t, h.Token, a.Task("tsk_nope", protocol.TaskDone, true)), http.StatusConflict, protocol.CodeUnknownEntity)
	wantError(t, h.post(t, h.Token, a.Release("clm_nope", "src/**")), http.StatusConflict, protocol.CodeUnknownEntity)
	wantError(t, h.post(t, h.Token, a.Handoff("hof_nope", "", nil, protocol.HandoffDeclined)), http.StatusConflict, protocol.CodeUnknownEntity)
	wantError(t, h.post(t, h.Token, a.Task("int_1", protocol.TaskDone, true)), http.StatusConflict, protocol.CodeUnknownEntity)
	wantError(t, h.post(t, h.Token, a.Release("tsk_1", "src/**")), http.StatusConflict, protocol.CodeUnknownEntity)
	// An entity of the other workspace does not exist here.
	o := fixture.NewReplica(wsOther, "rep_o", "olga@example.com")
	if a := h.post(t, h.Other, o.Task("tsk_o", protocol.TaskOpen, false)); a.Status != http.StatusOK {
		t.Fatalf("ingest into %s: %s", wsOther, a)
	}
	wantError(t, h.post(t, h.Token, a.Task("tsk_o", protocol.TaskDone, true)), http.StatusConflict, protocol.CodeUnknownEntity)

	// Refusals take no serverSequence: the next accepted envelope is 4.
	if r := h.ingest(t, a.Release("clm_1", "src/**")); r.ServerSequence != 4 {
		t.Fatalf("after refusals: receipt %+v, want serverSequence 4", r)
	}
	if r := h.ingest(t, b.Task("tsk_1", protocol.TaskDone, true)); r.ServerSequence != 5 {
		t.Fatalf("after refusals: receipt %+v, want serverSequence 5", r)
	}
	log := h.readAll(t, h.Token, "/v1/events", 0)
	wantGapFree(t, log, 5)
	wantTypes := []protocol.EventType{protocol.EventIntentPublished, protocol.EventTaskCreated, protocol.EventClaimCreated, protocol.EventClaimReleased, protocol.EventTaskUpdated}
	for i, e := range log {
		if e.Type != wantTypes[i] {
			t.Fatalf("log[%d] is %s, want %s", i, e.Type, wantTypes[i])
		}
	}
	if log[0].Intent().Summary == "something else" {
		t.Fatal("a refused ID_CONFLICT overwrote the logged content")
	}
}

// atOnce runs f(0..n-1) on n goroutines released together and returns
// their answers.
func atOnce(t *testing.T, n int, f func(i int) (*answer, error)) []*answer {
	t.Helper()
	out := make([]*answer, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i], errs[i] = f(i)
		}()
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestConcurrentRetriesAndConflicts: the ingest rules hold when the
// contenders arrive at once and share a group commit.
func TestConcurrentRetriesAndConflicts(t *testing.T) {
	h := newHub(t, hub.Config{})
	const n, rounds = 16, 4
	logged := int64(0)
	r := fixture.NewReplica(wsMain, "rep_a", "ada@example.com")
	for round := range rounds {
		// One envelope retried by n clients at once: logged once, and every
		// answer is its receipt.
		body := ingestBody(t, r.Claim(fmt.Sprintf("clm_%d", round), true, "src/**"))
		fresh := 0
		var first protocol.IngestReceipt
		for i, a := range atOnce(t, n, func(int) (*answer, error) { return h.do("POST", "/v1/claims", h.Token, bytes.NewReader(body)) }) {
			rc := decodeReceipt(t, a)
			if !rc.Duplicate {
				fresh++
			}
			if i == 0 {
				first = rc
			}
			if rc.ServerSequence != first.ServerSequence || !rc.IngestedAt.Equal(first.IngestedAt) || rc.ID != first.ID {
				t.Fatalf("round %d: receipts differ: %+v and %+v", round, rc, first)
			}
		}
		if fresh != 1 {
			t.Fatalf("round %d: %d of %d identical posts were logged, want 1", round, fresh, n)
		}
		logged++

		// The same id opened by n replicas at once: one wins.
		id := fmt.Sprintf("tsk_race_%d", round)
		wins := 0
		for _, a := range atOnce(t, n, func(i int) (*answer, error) {
			e := fixture.NewReplica(wsMain, fmt.Sprintf("rep_%d_%d", round, i), "x@example.com").Task(id, protocol.TaskOpen, false)
			return h.do("POST", "/v1/tasks", h.Token, bytes.NewReader(ingestBody(t, e)))
		}) {
			if a.Status == http.StatusOK {
				wins++
				continue
			}
			wantError(t, a, http.StatusConflict, protocol.CodeIDConflict)
		}
		if wins != 1 {
			t.Fatalf("round %d: %d replicas opened %s, want 1", round, wins, id)
		}
		logged++

		// One (replicaId, clientSequence) with n different contents at once:
		// one wins; the others are ID_CONFLICT (same id) or
		// CLIENT_SEQUENCE_REGRESSION (another id).
		q := fixture.NewReplica(wsMain, fmt.Sprintf("rep_q%d", round), "q@example.com")
		wins = 0
		for _, a := range atOnce(t, n, func(i int) (*answer, error) {
			q := *q
			id := "int_same"
			if i%2 == 1 {
				id = fmt.Sprintf("int_other_%d", i)
			}
			e := q.Intent(fmt.Sprintf("%s_%d", id, round), fmt.Sprintf("dir%d/**", i))
			return h.do("POST", "/v1/intents", h.Token, bytes.NewReader(ingestBody(t, e)))
		}) {
			if a.Status == http.StatusOK {
				wins++
				continue
			}
			if a.Status != http.StatusConflict || !bytes.Contains(a.Body, []byte(protocol.CodeIDConflict)) && !bytes.Contains(a.Body, []byte(protocol.CodeClientSequenceRegression)) {
				t.Fatalf("round %d: %s", round, a)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d contents logged for one clientSequence, want 1", round, wins)
		}
		logged++
	}
	wantGapFree(t, h.readAll(t, h.Token, "/v1/events", 0), logged)
}

func TestSchemaInvalid(t *testing.T) {
	h := newHub(t, hub.Config{})
	r := fixture.NewReplica(wsMain, "rep_a", "ada@example.com")
	base := func(e *protocol.Envelope) map[string]any {
		var m map[string]any
		if err := json.Unmarshal(ingestBody(t, e), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	env := func(m map[string]any) map[string]any { return m["envelope"].(map[string]any) }
	payload := func(m map[string]any) map[string]any { return env(m)["payload"].(map[string]any) }
	cases := []struct {
		name, path string
		body       func() []byte
		field      string // the message must name it
	}{
		{"unknown top-level field", "/v1/tasks", func() []byte {
			m := base(r.Task("tsk_1", protocol.TaskOpen, false))
			m["extra"] = true
			return mustJSON(t, m)
		}, "extra"},
		{"unknown envelope field", "/v1/tasks", func() []byte {
			m := base(r.Task("tsk_1", protocol.TaskOpen, false))
			env(m)["colour"] = "blue"
			return mustJSON(t, m)
		}, "envelope.colour"},
		{"unknown payload field", "/v1/claims", func() []byte {
			m := base(r.Claim("clm_1", true, "src/**"))
			payload(m)["priority"] = 3
			return mustJSON(t, m)
		}, "payload.priority"},
		{"schemaVersion 2", "/v1/tasks", func() []byte {
			m := base(r.Task("tsk_1", protocol.TaskOpen, false))
			env(m)["schemaVersion"] = 2
			return mustJSON(t, m)
		}, "schemaVersion"},
		{"envelope id is not payload.id", "/v1/intents", func() []byte {
			m := base(r.Intent("int_1", "src/**"))
			payload(m)["id"] = "int_2"
			return mustJSON(t, m)
		}, "payload.id"},
		{"claim.created on /v1/tasks", "/v1/tasks", func() []byte {
			return ingestBody(t, r.Claim("clm_1", true, "src/**"))
		}, "envelope.type"},
		{"task.created on /v1/operations", "/v1/transactions", func() []byte {
			return ingestBody(t, r.Task("tsk_1", protocol.TaskOpen, false))
		}, "envelope.type"},
		{"unknown type", "/v1/tasks", func() []byte {
			m := base(r.Task("tsk_1", protocol.TaskOpen, false))
			env(m)["type"] = "task.deleted"
			return mustJSON(t, m)
		}, "type"},
		{"bad task status", "/v1/tasks", func() []byte {
			m := base(r.Task("tsk_1", protocol.TaskOpen, false))
			payload(m)["status"] = "finished"
			return mustJSON(t, m)
		}, "payload.status"},
		{"bad provider", "/v1/tasks", func() []byte {
			m := base(r.Task("tsk_1", protocol.TaskOpen, false))
			env(m)["agent"].(map[string]any)["provider"] = "vim"
			return mustJSON(t, m)
		}, "agent.provider"},
		{"bad validation kind", "/v1/validations", func() []byte {
			m := base(r.Validation("val_1", protocol.ValidationPassed))
			payload(m)["kind"] = "vibes"
			return mustJSON(t, m)
		}, "payload.kind"},
		{"bad envelope time", "/v1/tasks", func() []byte {
			m := base(r.Task("tsk_1", protocol.TaskOpen, false))
			env(m)["createdAt"] = "yesterday"
			return mustJSON(t, m)
		}, "createdAt"},
		{"bad payload time", "/v1/claims", func() []byte {
			m := base(r.Claim("clm_1", true, "src/**"))
			payload(m)["expiresAt"] = "2026-13-45T99:00:00Z"
			return mustJSON(t, m)
		}, "payload.expiresAt"},
		{"wrong JSON type", "/v1/tasks", func() []byte {
			m := base(r.Task("tsk_1", protocol.TaskOpen, false))
			env(m)["clientSequence"] = "seven"
			return mustJSON(t, m)
		}, "clientSequence"},
		{"serverSequence present", "/v1/tasks", func() []byte {
			m := base(r.Task("tsk_1", protocol.TaskOpen, false))
			env(m)["serverSequence"] = 7
			return mustJSON(t, m)
		}, "serverSequence"},
		{"ingestedAt present", "/v1/tasks", func() []byte {
			m := base(r.Task("tsk_1", protocol.TaskOpen, false))
			env(m)["ingestedAt"] = "2026-11-29T10:00:00Z"
			return mustJSON(t, m)
		}, "ingestedAt"},
		{"payload workspace differs", "/v1/tasks", func() []byte {
			m := base(r.Task("tsk_1", protocol.TaskOpen, false))
			payload(m)["workspaceId"] = wsOther
			return mustJSON(t, m)
		}, "payload.workspaceId"},
		{"missing envelope", "/v1/tasks", func() []byte { return []byte(`{}`) }, "envelope"},
		{"null envelope", "/v1/tasks", func() []byte { return []byte(`{"envelope":null}`) }, "envelope"},
		{"malformed JSON", "/v1/tasks", func() []byte { return []byte(`{"envelope": {"id": "tsk_1",`) }, ""},
		{"not JSON", "/v1/tasks", func() []byte { return []byte(`envelope=1`) }, ""},
		{"empty body", "/v1/tasks", func() []byte { return nil }, ""},
		{"two values", "/v1/tasks", func() []byte {
			b := ingestBody(t, r.Task("tsk_1", protocol.TaskOpen, false))
			return append(b, b...)
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := h.mustDo(t, "POST", c.path, h.Token, c.body())
			msg := wantError(t, a, http.StatusBadRequest, protocol.CodeSchemaInvalid)
			if !strings.Contains(msg, c.field) {
				t.Fatalf("message %q does not name %q", msg, c.field)
			}
		})
	}
	// None of them was logged or took a serverSequence.
	if rc := h.ingest(t, r.Task("tsk_ok", protocol.TaskOpen, false)); rc.ServerSequence != 1 {
		t.Fatalf("after %d refusals: receipt %+v, want serverSequence 1", len(cases), rc)
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAuth(t *testing.T) {
	h := newHub(t, hub.Config{})
	r := fixture.NewReplica(wsMain, "rep_a", "ada@example.com")
	body := ingestBody(t, r.Intent("int_1", "src/**"))

	for _, auth := range []string{"", "Bearer ", "Bearer nope", "Basic " + h.Token, h.Token, "bearer " + h.Token} {
		for _, rq := range []struct{ method, path string }{
			{"POST", "/v1/intents"}, {"GET", "/v1/events"}, {"GET", "/v1/intents"}, {"GET", "/v1/presence"}, {"POST", "/v1/presence"},
		} {
			req, _ := http.NewRequest(rq.method, h.URL+rq.path, bytes.NewReader(body))
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := h.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			wantError(t, &answer{resp.StatusCode, resp.Header, b}, http.StatusUnauthorized, protocol.CodeUnauthenticated)
		}
	}

	// An envelope of another workspace than the token's.
	o := fixture.NewReplica(wsOther, "rep_o", "olga@example.com")
	wantError(t, h.post(t, h.Token, o.Intent("int_o", "src/**")), http.StatusForbidden, protocol.CodeForbidden)
	wantError(t, h.post(t, h.Other, r.Intent("int_m", "src/**")), http.StatusForbidden, protocol.CodeForbidden)
	// A read naming another workspace.
	for _, p := range []string{"/v1/events", "/v1/operations", "/v1/claims", "/v1/presence"} {
		wantError(t, h.mustDo(t, "GET", p+"?workspaceId="+wsOther, h.Token, nil), http.StatusForbidden, protocol.CodeForbidden)
		if a := h.mustDo(t, "GET", p+"?workspaceId="+wsMain, h.Token, nil); a.Status != http.StatusOK {
			t.Fatalf("GET %s naming the token's own workspace: %s", p, a)
		}
	}

	// Each token reads and writes its own workspace's log only.
	if rc := decodeReceipt(t, h.mustDo(t, "POST", "/v1/intents", h.Token, body)); rc.ServerSequence != 1 {
		t.Fatalf("receipt %+v", rc)
	}
	if rc := decodeReceipt(t, h.post(t, h.Other, o.Intent("int_o2", "src/**"))); rc.ServerSequence != 1 {
		t.Fatalf("the other workspace's first receipt %+v, want serverSequence 1", rc)
	}
	mine, theirs := h.readAll(t, h.Token, "/v1/events", 0), h.readAll(t, h.Other, "/v1/events", 0)
	if len(mine) != 1 || mine[0].WorkspaceID != wsMain || len(theirs) != 1 || theirs[0].WorkspaceID != wsOther {
		t.Fatalf("workspaces not separate: %d %d", len(mine), len(theirs))
	}
}

// rawRequest sends head and then body on a raw connection and returns the
// answer, without failing if the server stops reading the body early.
func rawRequest(t *testing.T, addr, head string, body io.Reader) *answer {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	go io.Copy(c, body) // may fail once the server answers and closes: fine
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return &answer{resp.StatusCode, resp.Header, b}
}

// chunked encodes r as an HTTP/1.1 chunked body.
type chunked struct {
	r    io.Reader
	done bool
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.done {
		return 0, io.EOF
	}
	if len(p) < 64 {
		return 0, io.ErrShortBuffer
	}
	buf := make([]byte, min(len(p)-32, 16<<10))
	n, err := c.r.Read(buf)
	if n > 0 {
		return copy(p, fmt.Sprintf("%x\r\n%s\r\n", n, buf[:n])), nil
	}
	if err == io.EOF {
		c.done = true
		return copy(p, "0\r\n\r\n"), nil
	}
	return 0, err
}

// padded is a valid ingest body grown with trailing whitespace to size bytes.
func padded(t *testing.T, e *protocol.Envelope, size int) []byte {
	t.Helper()
	b := ingestBody(t, e)
	if len(b) > size {
		t.Fatalf("body already %d bytes", len(b))
	}
	return append(b, bytes.Repeat([]byte(" "), size-len(b))...)
}

func TestBodyLimit(t *testing.T) {
	h := newHub(t, hub.Config{})
	r := fixture.NewReplica(wsMain, "rep_a", "ada@example.com")
	addr := strings.TrimPrefix(h.URL, "http://")

	// Exactly 1 MiB is allowed, with a length or chunked.
	if a := h.mustDo(t, "POST", "/v1/intents", h.Token, padded(t, r.Intent("int_1", "src/**"), protocol.MaxBodyBytes)); a.Status != http.StatusOK {
		t.Fatalf("a body of exactly 1 MiB: %s", a)
	}
	a, err := h.do("POST", "/v1/intents", h.Token, io.MultiReader(bytes.NewReader(padded(t, r.Intent("int_2", "src/**"), protocol.MaxBodyBytes))))
	if err != nil || a.Status != http.StatusOK {
		t.Fatalf("a chunked body of exactly 1 MiB: %v %v", a, err)
	}

	over := padded(t, r.Intent("int_3", "src/**"), protocol.MaxBodyBytes+1)
	huge := bytes.Repeat([]byte("x"), 8<<20)
	for _, c := range []struct {
		name string
		path string
		body []byte
	}{
		{"one byte over", "/v1/intents", over},
		{"8 MiB", "/v1/claims", huge},
		{"presence", "/v1/presence", huge},
	} {
		t.Run(c.name+"/content-length", func(t *testing.T) {
			head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", c.path, addr, h.Token, len(c.body))
			wantError(t, rawRequest(t, addr, head, bytes.NewReader(c.body)), http.StatusRequestEntityTooLarge, protocol.CodePayloadTooLarge)
		})
		t.Run(c.name+"/chunked", func(t *testing.T) {
			head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", c.path, addr, h.Token)
			wantError(t, rawRequest(t, addr, head, &chunked{r: bytes.NewReader(c.body)}), http.StatusRequestEntityTooLarge, protocol.CodePayloadTooLarge)
		})
	}
	// The same through Go's client, which sends a length for a bytes.Reader
	// and chunks any other reader.
	a = h.mustDo(t, "POST", "/v1/intents", h.Token, over)
	wantError(t, a, http.StatusRequestEntityTooLarge, protocol.CodePayloadTooLarge)
	a, err = h.do("POST", "/v1/intents", h.Token, io.MultiReader(bytes.NewReader(over)))
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, a, http.StatusRequestEntityTooLarge, protocol.CodePayloadTooLarge)

	// Nothing oversized was logged.
	log := h.readAll(t, h.Token, "/v1/events", 0)
	wantGapFree(t, log, 2)
	if log[0].ID != "int_1" || log[1].ID != "int_2" {
		t.Fatalf("logged %s, %s", log[0].ID, log[1].ID)
	}
}

// stalled yields its bytes and then blocks until the test ends, like a
// client that stops sending in the middle of a body.
type stalled struct {
	b    []byte
	stop <-chan struct{}
}

func (s *stalled) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		<-s.stop
		return 0, io.EOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

// TestBodyReadDeadline: a body that stops arriving is answered (and its
// connection closed) instead of holding a handler forever.
func TestBodyReadDeadline(t *testing.T) {
	t.Cleanup(hub.SetBodyReadWait(200 * time.Millisecond)) // runs after the hub stops
	h := newHub(t, hub.Config{})
	addr := strings.TrimPrefix(h.URL, "http://")
	body := ingestBody(t, fixture.NewReplica(wsMain, "rep_a", "ada@example.com").Intent("int_1", "src/**"))
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	for _, c := range []struct{ name, path, framing string }{
		{"ingest/content-length", "/v1/intents", fmt.Sprintf("Content-Length: %d", len(body))},
		{"ingest/chunked", "/v1/intents", "Transfer-Encoding: chunked"},
		{"presence", "/v1/presence", fmt.Sprintf("Content-Length: %d", len(body))},
	} {
		t.Run(c.name, func(t *testing.T) {
			head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n%s\r\n\r\n", c.path, addr, h.Token, c.framing)
			var r io.Reader = &stalled{b: body[:len(body)/2], stop: stop}
			if strings.HasPrefix(c.framing, "Transfer-Encoding") {
				r = &chunked{r: r}
			}
			if msg := wantError(t, rawRequest(t, addr, head, r), http.StatusBadRequest, protocol.CodeSchemaInvalid); !strings.Contains(msg, "did not arrive within 200ms") {
				t.Fatalf("message %q does not say the body did not arrive in time", msg)
			}
		})
	}
	// Nothing was logged, and the service still serves.
	if rc := h.ingest(t, fixture.NewReplica(wsMain, "rep_a", "ada@example.com").Intent("int_1", "src/**")); rc.ServerSequence != 1 {
		t.Fatalf("receipt %+v, want serverSequence 1", rc)
	}
}

// --- paging ---------------------------------------------------------------

// ingestConcurrently ingests n envelopes from writers replicas at once
// (rotating kinds via fixture Any) and returns their receipts by
// "replica/clientSequence".
func (h *testHub) ingestConcurrently(t testing.TB, writers, each int, prefix string) map[string]protocol.IngestReceipt {
	t.Helper()
	var mu sync.Mutex
	out := map[string]protocol.IngestReceipt{}
	errc := make(chan error, writers)
	for w := range writers {
		go func() {
			r := fixture.NewReplica(wsMain, fmt.Sprintf("%s_%d", prefix, w), fmt.Sprintf("w%d@example.com", w))
			for i := range each {
				e := r.Any(prefix, i)
				b, err := json.Marshal(protocol.IngestRequest{Envelope: e})
				if err != nil {
					errc <- err
					return
				}
				a, err := h.do("POST", ingestPath(e), h.Token, bytes.NewReader(b))
				if err != nil {
					errc <- err
					return
				}
				if a.Status != http.StatusOK {
					errc <- fmt.Errorf("%s/%d: %s", e.ReplicaID, e.ClientSequence, a)
					return
				}
				var rc protocol.IngestReceipt
				if err := json.Unmarshal(a.Body, &rc); err != nil {
					errc <- err
					return
				}
				mu.Lock()
				out[fmt.Sprintf("%s/%d", e.ReplicaID, e.ClientSequence)] = rc
				mu.Unlock()
			}
			errc <- nil
		}()
	}
	for range writers {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestPaging(t *testing.T) {
	h := newHub(t, hub.Config{})
	const writers, each = 8, 130 // 1040 operations: more than one page of 1000
	receipts := h.ingestConcurrently(t, writers, each, "pg")
	// Add the changing events, which the Any rotation does not make.
	r := fixture.NewReplica(wsMain, "rep_changes", "cy@example.com")
	for _, e := range []*protocol.Envelope{
		r.Task("tsk_pg", protocol.TaskOpen, false), r.Claim("clm_pg", true, "pg/**"),
		r.Handoff("hof_pg", "ada@example.com", []string{"clm_pg"}, ""), r.Task("tsk_pg", protocol.TaskDone, true),
		r.Handoff("hof_pg", "", nil, protocol.HandoffDeclined), r.Release("clm_pg", "pg/**"),
	} {
		receipts[fmt.Sprintf("%s/%d", e.ReplicaID, e.ClientSequence)] = h.ingest(t, e)
	}
	n := int64(len(receipts))

	all := h.readAll(t, h.Token, "/v1/events", 0)
	wantGapFree(t, all, n)
	for _, e := range all {
		rc := receipts[fmt.Sprintf("%s/%d", e.ReplicaID, e.ClientSequence)]
		if rc.ServerSequence != e.ServerSequence || rc.ID != e.ID || !rc.IngestedAt.Equal(*e.IngestedAt) {
			t.Fatalf("%s/%d logged at %d (%v), receipt %+v", e.ReplicaID, e.ClientSequence, e.ServerSequence, e.IngestedAt, rc)
		}
	}

	// Small pages cover the same log in order.
	var seqs []int64
	for after, pages := int64(0), 0; ; pages++ {
		p := h.page(t, h.Token, "/v1/events", after, 7).Page
		if len(p.Items) > 7 {
			t.Fatalf("page of %d items with limit 7", len(p.Items))
		}
		if p.HasMore != (after+int64(len(p.Items)) < n) || (p.HasMore && len(p.Items) != 7) {
			t.Fatalf("after %d: %d items, hasMore %v (log of %d)", after, len(p.Items), p.HasMore, n)
		}
		for _, e := range p.Items {
			seqs = append(seqs, e.ServerSequence)
		}
		if len(p.Items) > 0 {
			after = p.Items[len(p.Items)-1].ServerSequence
		}
		if p.NextCursor != after {
			t.Fatalf("nextCursor %d, want %d", p.NextCursor, after)
		}
		if !p.HasMore {
			break
		}
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("paged sequences not 1..%d: %v", n, seqs)
		}
	}

	// Default limit, the cap, and reading past the end.
	if p := h.page(t, h.Token, "/v1/events", 0, 0).Page; len(p.Items) != store.DefaultPageLimit || !p.HasMore {
		t.Fatalf("default page: %d items, hasMore %v", len(p.Items), p.HasMore)
	}
	if p := h.page(t, h.Token, "/v1/events", 0, 5000).Page; len(p.Items) != store.MaxPageLimit || !p.HasMore || p.NextCursor != store.MaxPageLimit {
		t.Fatalf("limit 5000: %d items, hasMore %v, nextCursor %d; want it capped at %d", len(p.Items), p.HasMore, p.NextCursor, store.MaxPageLimit)
	}
	if p := h.page(t, h.Token, "/v1/events", n-1, 0).Page; len(p.Items) != 1 || p.HasMore || p.NextCursor != n {
		t.Fatalf("last page: %d items, hasMore %v, nextCursor %d", len(p.Items), p.HasMore, p.NextCursor)
	}
	for _, after := range []int64{n, n + 50} {
		if p := h.page(t, h.Token, "/v1/events", after, 0).Page; len(p.Items) != 0 || p.HasMore || p.NextCursor != after {
			t.Fatalf("after %d (head %d): %d items, hasMore %v, nextCursor %d", after, n, len(p.Items), p.HasMore, p.NextCursor)
		}
	}

	// Each kind's endpoint pages exactly its own events, in order, also in
	// pages smaller than the log.
	for _, k := range protocol.Kinds {
		path := "/v1/" + k.Collection()
		if k == protocol.KindTransaction {
			path = "/v1/operations"
		}
		var want []int64
		for _, e := range all {
			if e.Type.Kind() == k {
				want = append(want, e.ServerSequence)
			}
		}
		var got []int64
		for _, e := range h.readAll(t, h.Token, path, 0) {
			if e.Type.Kind() != k {
				t.Fatalf("GET %s returned a %s", path, e.Type)
			}
			got = append(got, e.ServerSequence)
		}
		if !slices.Equal(got, want) || len(want) == 0 {
			t.Fatalf("GET %s: %d items, want %d", path, len(got), len(want))
		}
		// Small pages of a filtered read: nextCursor is the last item's
		// serverSequence, not the log's.
		p := h.page(t, h.Token, path, 0, 1).Page
		if !slices.Equal(seqsOf(p.Items), want[:1]) || !p.HasMore || p.NextCursor != want[0] {
			t.Fatalf("GET %s limit 1: %v hasMore %v nextCursor %d, want %v", path, seqsOf(p.Items), p.HasMore, p.NextCursor, want[:1])
		}
		if len(want) >= 5 {
			p := h.page(t, h.Token, path, want[0], 3).Page
			if !slices.Equal(seqsOf(p.Items), want[1:4]) || !p.HasMore || p.NextCursor != want[3] {
				t.Fatalf("GET %s after %d limit 3: %v hasMore %v nextCursor %d, want %v", path, want[0], seqsOf(p.Items), p.HasMore, p.NextCursor, want[1:4])
			}
		}
		// Past its last item: an empty page whose cursor stays put.
		if p := h.page(t, h.Token, path, want[len(want)-1], 0).Page; len(p.Items) != 0 || p.HasMore || p.NextCursor != want[len(want)-1] {
			t.Fatalf("GET %s after its last item: %v hasMore %v nextCursor %d", path, seqsOf(p.Items), p.HasMore, p.NextCursor)
		}
	}
	var changes []protocol.EventType
	for _, path := range []string{"/v1/tasks", "/v1/claims", "/v1/handoffs"} {
		for _, e := range h.readAll(t, h.Token, path, 0) {
			if !e.Type.Opens() {
				changes = append(changes, e.Type)
			}
		}
	}
	slices.Sort(changes)
	if want := []protocol.EventType{protocol.EventClaimReleased, protocol.EventHandoffResponded, protocol.EventTaskUpdated}; !slices.Equal(changes, want) {
		t.Fatalf("changing events on the kind pages: %v, want %v", changes, want)
	}

	// A version-1 client gets the page without status and protocolVersion.
	for _, q := range []string{"afterSequence=0&limit=3", "afterSequence=0&limit=3&protocolVersion=1", "limit=3"} {
		a := h.mustDo(t, "GET", "/v1/events?"+q, h.Token, nil)
		if a.Status != http.StatusOK {
			t.Fatalf("v1 page: %s", a)
		}
		wantJSON(t, a)
		wantKeys(t, a.Body, "items", "nextCursor", "hasMore")
		var p protocol.Page
		if err := strictUnmarshal(a.Body, &p); err != nil {
			t.Fatalf("v1 page: %v", err)
		}
		if len(p.Items) != 3 || p.Items[0].ServerSequence != 1 || p.NextCursor != 3 || !p.HasMore {
			t.Fatalf("v1 page %s: %d items, nextCursor %d, hasMore %v", q, len(p.Items), p.NextCursor, p.HasMore)
		}
	}
	a := h.mustDo(t, "GET", "/v1/events?afterSequence=0&limit=1&protocolVersion=2", h.Token, nil)
	wantKeys(t, a.Body, "status", "protocolVersion", "items", "nextCursor", "hasMore")
	var raw struct{ Items []map[string]json.RawMessage }
	if err := json.Unmarshal(a.Body, &raw); err != nil || len(raw.Items) != 1 || raw.Items[0]["serverSequence"] == nil || raw.Items[0]["ingestedAt"] == nil {
		t.Fatalf("a page item lacks serverSequence or ingestedAt: %s", a.Body)
	}

	// Bad parameters.
	for _, c := range []struct{ query, names string }{
		{"afterSequence=-1", "afterSequence"},
		{"afterSequence=abc", "afterSequence"},
		{"afterSequence=1.5", "afterSequence"},
		{"afterSequence=99999999999999999999", "afterSequence"},
		{"limit=0", "limit"},
		{"limit=-5", "limit"},
		{"limit=ten", "limit"},
		{"protocolVersion=3", "protocolVersion"},
		{"protocolVersion=two", "protocolVersion"},
		{"protocolVersion=0", "protocolVersion"},
	} {
		for _, path := range []string{"/v1/events", "/v1/operations", "/v1/validations"} {
			msg := wantError(t, h.mustDo(t, "GET", path+"?"+c.query, h.Token, nil), http.StatusBadRequest, protocol.CodeSchemaInvalid)
			if !strings.Contains(msg, c.names) {
				t.Fatalf("GET %s?%s: message %q does not name %s", path, c.query, msg, c.names)
			}
		}
	}
}

func seqsOf(es []*protocol.Envelope) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.ServerSequence
	}
	return out
}

// --- retention ------------------------------------------------------------

func TestRetention(t *testing.T) {
	const retention = 50 * time.Millisecond
	h := newHub(t, hub.Config{Retention: retention, SweepEvery: 20 * time.Millisecond})
	r := fixture.NewReplica(wsMain, "rep_a", "ada@example.com")
	first := r.Task("tsk_old", protocol.TaskOpen, false)
	sent := []*protocol.Envelope{first, r.Claim("clm_old", true, "src/**"), r.Intent("int_old", "src/**"), r.Transaction("txn_old", "a.go"), r.Validation("val_old", protocol.ValidationFailed)}
	var receipts []protocol.IngestReceipt
	for _, e := range sent {
		receipts = append(receipts, h.ingest(t, e))
	}
	n := int64(len(sent))

	// Wait until retention deleted all of them.
	var tooOld *protocol.CursorTooOld
	deadline := time.Now().Add(10 * time.Second)
	for {
		p := h.page(t, h.Token, "/v1/events", 0, 0)
		if p.TooOld != nil && p.TooOld.ResyncFrom == n {
			tooOld = p.TooOld
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retention did not delete %d operations within 10s: last answer %+v %+v", n, p.Page, p.TooOld)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if tooOld.Status != protocol.StatusCursorTooOld || tooOld.ProtocolVersion != 2 {
		t.Fatalf("cursor-too-old answer %+v", tooOld)
	}
	if want := retention.Hours() / 24; tooOld.RetentionDays <= 0 || math.Abs(tooOld.RetentionDays-want) > want*1e-9 {
		t.Fatalf("retentionDays %g, want %g", tooOld.RetentionDays, want)
	}
	a := h.mustDo(t, "GET", "/v1/events?afterSequence=0&protocolVersion=2", h.Token, nil)
	wantJSON(t, a)
	wantKeys(t, a.Body, "status", "protocolVersion", "resyncFrom", "retentionDays")
	// Every cursor below the watermark, on every page endpoint.
	for _, path := range []string{"/v1/operations", "/v1/tasks", "/v1/claims", "/v1/handoffs", "/v1/intents", "/v1/validations"} {
		for _, after := range []int64{0, n - 1} {
			if p := h.page(t, h.Token, path, after, 0); p.TooOld == nil || p.TooOld.ResyncFrom != n {
				t.Fatalf("GET %s after %d: %+v, want cursor-too-old from %d", path, after, p.Page, n)
			}
		}
	}
	// A version-1 client gets 410 Gone, as a JSON error.
	for _, q := range []string{"afterSequence=0", "afterSequence=2&protocolVersion=1"} {
		wantError(t, h.mustDo(t, "GET", "/v1/events?"+q, h.Token, nil), http.StatusGone, protocol.CodeCursorTooOld)
		wantError(t, h.mustDo(t, "GET", "/v1/operations?"+q, h.Token, nil), http.StatusGone, protocol.CodeCursorTooOld)
	}
	// Reading from resyncFrom works.
	if p := h.page(t, h.Token, "/v1/events", tooOld.ResyncFrom, 0); p.Page == nil || len(p.Page.Items) != 0 || p.Page.HasMore || p.Page.NextCursor != n {
		t.Fatalf("GET from resyncFrom %d: %+v %+v", tooOld.ResyncFrom, p.Page, p.TooOld)
	}
	// The other workspace has its own watermark.
	if p := h.page(t, h.Other, "/v1/events", 0, 0); p.Page == nil {
		t.Fatalf("the other workspace: %+v", p.TooOld)
	}

	// Dedupe outlives retention: a retried envelope gets its original
	// receipt, a changed one is still a conflict, and the entities still
	// exist for opening and changing events.
	for i, e := range sent {
		dup := decodeReceipt(t, h.post(t, h.Token, e))
		if !dup.Duplicate || dup.ServerSequence != receipts[i].ServerSequence || !dup.IngestedAt.Equal(receipts[i].IngestedAt) || dup.ID != e.ID {
			t.Fatalf("retry of swept %s: %+v, want %+v with duplicate", e.ID, dup, receipts[i])
		}
	}
	changed := clone(t, first)
	changed.Task().Title = "renamed"
	wantError(t, h.post(t, h.Token, changed), http.StatusConflict, protocol.CodeIDConflict)
	r.Next = 3
	wantError(t, h.post(t, h.Token, r.Intent("int_new", "src/**")), http.StatusConflict, protocol.CodeClientSequenceRegression)
	r.Next = n + 1
	wantError(t, h.post(t, h.Token, r.Intent("int_old", "src/**")), http.StatusConflict, protocol.CodeIDConflict)
	if rc := h.ingest(t, r.Task("tsk_old", protocol.TaskDone, true)); rc.ServerSequence != n+1 {
		t.Fatalf("task.updated of a swept task: %+v, want serverSequence %d", rc, n+1)
	}

	// Restarted with a long retention, the watermark holds and reading from
	// resyncFrom returns what came after.
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	h.serve(t, hub.Config{Retention: time.Hour, SweepEvery: 20 * time.Millisecond})
	if p := h.page(t, h.Token, "/v1/events", 0, 0); p.TooOld == nil || p.TooOld.ResyncFrom < n {
		t.Fatalf("after restart: %+v %+v, want cursor-too-old from at least %d", p.Page, p.TooOld, n)
	}
	resync := h.page(t, h.Token, "/v1/events", 0, 0).TooOld.ResyncFrom
	later := []*protocol.Envelope{r.Intent("int_new", "src/**"), r.Claim("clm_new", false, "docs/**")}
	for _, e := range later {
		h.ingest(t, e)
	}
	got := h.readAll(t, h.Token, "/v1/events", resync)
	if len(got) == 0 || got[len(got)-1].ID != "clm_new" || got[0].ServerSequence != resync+1 {
		t.Fatalf("read from resyncFrom %d: %v", resync, seqsOf(got))
	}
}

// --- 404, 405 -------------------------------------------------------------

func TestNotFoundAndMethodNotAllowed(t *testing.T) {
	h := newHub(t, hub.Config{})
	for _, p := range []string{"/", "/v2/events", "/v1/nothing", "/v1/claims/clm_1", "/v1/events/", "/v1"} {
		for _, method := range []string{"GET", "POST"} {
			msg := wantError(t, h.mustDo(t, method, p, h.Token, []byte(`{}`)), http.StatusNotFound, protocol.CodeNotFound)
			if !strings.Contains(msg, p) {
				t.Errorf("404 message %q does not name %s", msg, p)
			}
		}
	}
	for _, c := range []struct{ method, path, allow string }{
		{"DELETE", "/v1/claims", "GET, POST"},
		{"PUT", "/v1/tasks", "GET, POST"},
		{"PATCH", "/v1/events", "GET"},
		{"POST", "/v1/events", "GET"},
		{"POST", "/v1/operations", "GET"},
		{"GET", "/v1/transactions", "POST"},
		{"DELETE", "/v1/presence", "GET, POST"},
		{"POST", "/v1/subscribe", "GET"},
		{"POST", "/healthz", "GET"},
	} {
		a := h.mustDo(t, c.method, c.path, h.Token, []byte(`{}`))
		wantError(t, a, http.StatusMethodNotAllowed, protocol.CodeMethodNotAllowed)
		allow := strings.Split(a.Header.Get("Allow"), ", ")
		slices.Sort(allow)
		if strings.Join(allow, ", ") != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, a.Header.Get("Allow"), c.allow)
		}
	}
	a := h.mustDo(t, "GET", "/healthz", "", nil)
	if a.Status != http.StatusOK {
		t.Fatalf("healthz: %s", a)
	}
	wantJSON(t, a)
}

// --- graceful shutdown ----------------------------------------------------

func TestGracefulShutdown(t *testing.T) {
	h := newHub(t, hub.Config{})
	ws := h.subscribe(t, wsMain, "rep_watch", h.Token)

	const writers = 12
	type ack struct {
		key string
		seq int64
	}
	acks := make(chan ack, 100000)
	var started sync.WaitGroup
	var wg sync.WaitGroup
	for w := range writers {
		started.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := fixture.NewReplica(wsMain, fmt.Sprintf("rep_%d", w), "w@example.com")
			once := sync.OnceFunc(started.Done)
			defer once()
			for i := 0; ; i++ {
				e := r.Any("gs", i)
				b, _ := json.Marshal(protocol.IngestRequest{Envelope: e})
				a, err := h.do("POST", ingestPath(e), h.Token, bytes.NewReader(b))
				if err != nil {
					return // the service is gone: a client would retry elsewhere
				}
				if a.Status == http.StatusOK {
					var rc protocol.IngestReceipt
					if json.Unmarshal(a.Body, &rc) == nil {
						acks <- ack{fmt.Sprintf("%s/%d", e.ReplicaID, e.ClientSequence), rc.ServerSequence}
					}
					if i == 20 {
						once()
					}
					continue
				}
				if a.Status != http.StatusServiceUnavailable {
					t.Errorf("%s/%d during shutdown: %s", e.ReplicaID, e.ClientSequence, a)
				}
				return
			}
		}()
	}
	wsEnd := make(chan error, 1)
	go func() { wsEnd <- ws.drain(t) }()
	started.Wait() // every writer is streaming
	if err := h.stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	wg.Wait()
	close(acks)

	// The subscriber was told the service is going away.
	if err := <-wsEnd; websocketStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("subscriber closed with %v, want 1001 going away", err)
	}

	// Every acknowledged ingest is in the log after reopening the store,
	// once, where it was acknowledged.
	h.reopen(t)
	h.serve(t, hub.Config{})
	log := h.readAll(t, h.Token, "/v1/events", 0)
	head := int64(len(log))
	wantGapFree(t, log, head)
	bySeq := map[int64]string{}
	for _, e := range log {
		bySeq[e.ServerSequence] = fmt.Sprintf("%s/%d", e.ReplicaID, e.ClientSequence)
	}
	n := 0
	for a := range acks {
		n++
		if bySeq[a.seq] != a.key {
			t.Fatalf("%s acknowledged at %d, but the log has %q there", a.key, a.seq, bySeq[a.seq])
		}
	}
	if n < writers*20 {
		t.Fatalf("only %d acknowledged ingests", n)
	}
	t.Logf("%d acknowledged, %d logged", n, head)
}

// downStore is a store whose database has gone away.
type downStore struct{ hub.Store }

func (downStore) Page(context.Context, store.PageQuery) (*store.PageResult, error) {
	return nil, fmt.Errorf("page: %w: connection refused", store.ErrUnavailable)
}

func (downStore) IngestBatch(context.Context, []store.Item) ([]store.Result, error) {
	return nil, fmt.Errorf("ingest: %w: connection refused", store.ErrUnavailable)
}

// A database that cannot be reached is a 503 with Retry-After (clients
// retry), not a 500.
func TestDatabaseUnavailableIs503(t *testing.T) {
	h := newHub(t, hub.Config{})
	h.stop()
	real := h.Store
	srv := hub.New(hub.Config{Store: downStore{real}})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Serve(ctx, l)
	h.URL = "http://" + l.Addr().String()
	for _, a := range []*answer{
		h.mustDo(t, "GET", "/v1/events?afterSequence=0", h.Token, nil),
		h.post(t, h.Token, fixture.NewReplica(wsMain, "rep_a", "ada@example.com").Intent("int_1", "src/**")),
	} {
		var body protocol.ErrorBody
		if a.Status != http.StatusServiceUnavailable || a.Header.Get("Retry-After") == "" || json.Unmarshal(a.Body, &body) != nil || body.Error.Code != protocol.CodeUnavailable {
			t.Fatalf("with the database down: %s, want a JSON 503 UNAVAILABLE with Retry-After", a)
		}
	}
}
