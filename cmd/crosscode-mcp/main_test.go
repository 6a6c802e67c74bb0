package main

// These tests run the real command as a separate process: the test binary
// re-executes itself with CROSSCODE_MCP_TEST_MAIN set and then runs main()
// with the given arguments, so signals, exit statuses, stdout and stderr are
// those of the real binary.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/scratch"
	"github.com/crosscode/crosscode-mcp/internal/testing/fixture"
	"github.com/crosscode/crosscode-mcp/internal/testing/pgtest"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
	"github.com/crosscode/crosscode-mcp/protocol"
)

const mainEnv = "CROSSCODE_MCP_TEST_MAIN"

// brokenServerEnv=1 makes the test binary a server that never answers and
// complains on stderr for ever.
const brokenServerEnv = "CROSSCODE_MCP_TEST_BROKEN_SERVER"

// failingGameEnv=MESSAGE makes the test binary a game that prints MESSAGE
// on stderr and exits 3 before it connects.
const failingGameEnv = "CROSSCODE_MCP_TEST_FAILING_GAME"

func TestMain(m *testing.M) {
	if msg := os.Getenv(failingGameEnv); msg != "" {
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(3)
	}
	if os.Getenv(brokenServerEnv) == "1" {
		for {
			fmt.Fprintln(os.Stderr, "server broke: no database")
			time.Sleep(50 * time.Millisecond)
		}
	}
	if os.Getenv(mainEnv) == "1" {
		main() // exits by itself on failure
		os.Exit(0)
	}
	code := pgtest.Main(m)
	if hookClientPath != "" {
		os.RemoveAll(filepath.Dir(hookClientPath)) // built once for the run (hookClient)
	}
	os.Exit(code)
}

// command returns the real command with args, isolated from the user's
// default data directories.
func command(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), mainEnv+"=1", "HOME="+home, "XDG_DATA_HOME="+filepath.Join(home, "xdg"),
		"USERPROFILE="+home, "LOCALAPPDATA="+filepath.Join(home, "local"), "APPDATA="+filepath.Join(home, "roaming"), // Windows
		"CROSSCODE_HUB_DATA=", "CROSSCODE_HUB_DB=")
	cmd.Env = append(cmd.Env, tempEnv(t)...)
	stoppable(cmd)
	return cmd
}

// tempEnv gives a process started by the test a temp dir of its own, which
// the test removes: a process the test kills (and its browser) leaves what
// it had there.
func tempEnv(t *testing.T) []string {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	// A browser the process launched can still be writing its profile for
	// a moment after the process is gone (seen on a loaded machine:
	// "unlinkat .../profile/Default: directory not empty"): this cleanup,
	// which runs after the process's (registered later) and before
	// t.TempDir's (which tries once), tries for a while.
	t.Cleanup(func() { scratch.RemoveAll(tmp, 20*time.Second) })
	return []string{"TMPDIR=" + tmp, "TMP=" + tmp, "TEMP=" + tmp}
}

// runCLI runs the command to its end and returns stdout, stderr and the exit status.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := command(t, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Minute): // a hang guard: the demo plays a game (about 20 s quiet, over 60 s on a loaded 2-core machine)
		cmd.Process.Kill()
		<-done
		t.Fatalf("crosscode-mcp %s did not finish within 5 minutes", strings.Join(args, " "))
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

var tokenLine = regexp.MustCompile(`^ccm_[A-Za-z0-9_-]{20,}\n$`)

// createToken runs `token create` and returns the token.
func createToken(t *testing.T, data, workspace string) string {
	t.Helper()
	out, errOut, code := runCLI(t, "token", "create", "--data", data, "--workspace", workspace)
	if code != 0 || !tokenLine.MatchString(out) {
		t.Fatalf("token create: exit %d, stdout %q, stderr %q: want exactly one line, the token", code, out, errOut)
	}
	return strings.TrimSpace(out)
}

// server is a running `crosscode-mcp serve`.
type server struct {
	cmd    *exec.Cmd
	URL    string
	stdout *syncBuffer // what stdout printed after the listening line
	stderr *syncBuffer
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

var listeningLine = regexp.MustCompile(`^listening on (http://127\.0\.0\.1:\d+)$`)

// startServe starts `serve --listen 127.0.0.1:0 --data data` and waits for
// its one stdout line.
func startServe(t *testing.T, data string, extra ...string) *server {
	t.Helper()
	return startServeWith(t, append([]string{"--data", data}, extra...)...)
}

// startServeWith starts `serve --listen 127.0.0.1:0 args...` and waits for
// its one stdout line.
func startServeWith(t *testing.T, args ...string) *server {
	t.Helper()
	return startServeEnv(t, nil, args...)
}

// startServeEnv is startServeWith with extra environment variables.
func startServeEnv(t *testing.T, env []string, args ...string) *server {
	t.Helper()
	cmd := command(t, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	s := &server{cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = s.stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first := make(chan string, 1)
	go func() {
		br := bufio.NewReader(pipe)
		line, err := br.ReadString('\n')
		if err != nil {
			line = "(no line: " + err.Error() + ") " + line
		}
		first <- line
		io.Copy(s.stdout, br)
		s.err = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			cmd.Process.Kill()
			<-s.exited
		}
	})
	select {
	case line := <-first:
		m := listeningLine.FindStringSubmatch(strings.TrimSuffix(line, "\n"))
		if m == nil || !strings.HasSuffix(line, "\n") {
			t.Fatalf("serve's first stdout line %q, want %q (stderr: %s)", line, "listening on http://127.0.0.1:PORT", s.stderr)
		}
		s.URL = m[1]
	case <-time.After(60 * time.Second):
		t.Fatalf("serve printed no line within 60s (stderr: %s)", s.stderr)
	}
	return s
}

// wait waits for the process to exit and returns its status.
func (s *server) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-s.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not exit within 60s (stderr: %s)", s.stderr)
	}
	return s.cmd.ProcessState.ExitCode()
}

// SIGTERM is sent as the OS's graceful stop (stopGracefully: Ctrl+Break on
// Windows).
func (s *server) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	var err error
	if sig == syscall.SIGTERM {
		err = stopGracefully(s.cmd.Process)
		if err != nil {
			sysdeps.SkipUnderWine(t, "Wine does not deliver Ctrl+Break to another process (GenerateConsoleCtrlEvent: "+err.Error()+"), the graceful stop of a Windows console program")
		}
	} else {
		err = s.cmd.Process.Signal(sig)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// client is an HTTP client of the service.
type client struct {
	base  string
	token string
	http  *http.Client
}

func newClient(t *testing.T, base, token string) *client {
	tr := &http.Transport{MaxIdleConnsPerHost: 32}
	t.Cleanup(tr.CloseIdleConnections)
	return &client{base: base, token: token, http: &http.Client{Transport: tr, Timeout: 20 * time.Second}}
}

func (c *client) do(method, path string, body []byte) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// ingest posts one envelope; err is for transport failures only.
func (c *client) ingest(body []byte, kind protocol.Kind) (int, *protocol.IngestReceipt, []byte, error) {
	status, b, err := c.do("POST", "/v1/"+kind.Collection(), body)
	if err != nil || status != http.StatusOK {
		return status, nil, b, err
	}
	var r protocol.IngestReceipt
	if err := json.Unmarshal(b, &r); err != nil {
		return status, nil, b, fmt.Errorf("receipt %s: %w", b, err)
	}
	return status, &r, b, nil
}

// events reads the whole log with version-2 pages.
func (c *client) events(t *testing.T) []*protocol.Envelope {
	t.Helper()
	var out []*protocol.Envelope
	for after := int64(0); ; {
		q := url.Values{"afterSequence": {fmt.Sprint(after)}, "limit": {"1000"}, "protocolVersion": {"2"}}
		status, b, err := c.do("GET", "/v1/events?"+q.Encode(), nil)
		if err != nil || status != http.StatusOK {
			t.Fatalf("GET /v1/events: %d %s %v", status, b, err)
		}
		p, err := protocol.DecodePageResponse(b)
		if err != nil || p.Page == nil {
			t.Fatalf("GET /v1/events: %v %s", err, b)
		}
		out = append(out, p.Page.Items...)
		after = p.Page.NextCursor
		if !p.Page.HasMore {
			return out
		}
	}
}

type key struct {
	replica string
	cs      int64
}

// wantLog checks that the log is gap-free, holds each envelope once, and
// that every entry of want is at its serverSequence.
func wantLog(t *testing.T, log []*protocol.Envelope, want map[key]int64) map[key]int64 {
	t.Helper()
	got := map[key]int64{}
	for i, e := range log {
		if e.ServerSequence != int64(i+1) {
			t.Fatalf("log[%d] at serverSequence %d: not gap-free", i, e.ServerSequence)
		}
		k := key{e.ReplicaID, e.ClientSequence}
		if s, dup := got[k]; dup {
			t.Fatalf("%v logged twice, at %d and %d", k, s, e.ServerSequence)
		}
		got[k] = e.ServerSequence
	}
	for k, seq := range want {
		if got[k] != seq {
			t.Fatalf("%v acknowledged at serverSequence %d, logged at %d (0: missing)", k, seq, got[k])
		}
	}
	return got
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version"} {
		out, errOut, code := runCLI(t, arg)
		if code != 0 || !strings.Contains(out, "crosscode-mcp") || strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q", arg, code, out, errOut)
		}
	}
}

func TestTokenCreate(t *testing.T) {
	data := t.TempDir()
	tok1 := createToken(t, data, "mygame")
	tok2 := createToken(t, data, "mygame")
	tokOther := createToken(t, data, "other")
	if tok1 == tok2 || tok1 == tokOther {
		t.Fatal("token create printed the same token twice")
	}
	if out, errOut, code := runCLI(t, "token", "create", "--data", data, "--workspace", "paid", "--plan", "enterprise"); code != 0 || !tokenLine.MatchString(out) {
		t.Fatalf("token create --plan enterprise: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// Mistakes print nothing on stdout, and say why on stderr.
	for _, c := range []struct {
		args []string
		code int // 0: any failure
	}{
		{[]string{"token", "create", "--data", data}, 2},                                       // no workspace
		{[]string{"token"}, 2},                                                                 // no subcommand
		{[]string{"token", "delete", "--data", data, "--workspace", "mygame"}, 2},              // unknown subcommand
		{[]string{"token", "create", "--data", data, "--workspace", "w", "--plan", "gold"}, 1}, // unknown plan
		{[]string{"token", "create", "--data", data, "--workspace", "w", "--bogus"}, 0},        // unknown flag: see TestFlagMistakesExit2
	} {
		out, errOut, code := runCLI(t, c.args...)
		if (c.code == 0 && code == 0) || (c.code != 0 && code != c.code) || out != "" || errOut == "" {
			t.Errorf("%v: exit %d (want %d), stdout %q (want none), stderr %q (want a reason)", c.args, code, c.code, out, errOut)
		}
	}

	// The tokens grant their workspace, and only it, on a service over the
	// same data directory.
	s := startServe(t, data)
	for _, tok := range []string{tok1, tok2} {
		if status, b, err := newClient(t, s.URL, tok).do("GET", "/v1/events?protocolVersion=2", nil); err != nil || status != http.StatusOK {
			t.Fatalf("GET /v1/events with a created token: %d %s %v", status, b, err)
		}
	}
	if status, b, _ := newClient(t, s.URL, tok1).do("GET", "/v1/events?workspaceId=other", nil); status != http.StatusForbidden {
		t.Fatalf("mygame's token reading other: %d %s", status, b)
	}
	o := fixture.NewReplica("other", "rep_o", "olga@example.com")
	body, _ := json.Marshal(protocol.IngestRequest{Envelope: o.Intent("int_o", "src/**")})
	if status, r, b, err := newClient(t, s.URL, tokOther).ingest(body, protocol.KindIntent); err != nil || status != http.StatusOK || r.ServerSequence != 1 {
		t.Fatalf("ingest with other's token: %d %s %v", status, b, err)
	}
	if status, b, _ := newClient(t, s.URL, "ccm_invalid").do("GET", "/v1/events", nil); status != http.StatusUnauthorized {
		t.Fatalf("an invalid token: %d %s", status, b)
	}
	s.signal(t, syscall.SIGTERM)
	if code := s.wait(t); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM", code)
	}
}

func TestServeOutput(t *testing.T) {
	data := t.TempDir()
	tok := createToken(t, data, "mygame")
	s := startServe(t, data)
	c := newClient(t, s.URL, tok)
	if status, b, err := c.do("GET", "/healthz", nil); err != nil || status != http.StatusOK {
		t.Fatalf("GET /healthz: %d %s %v", status, b, err)
	}
	r := fixture.NewReplica("mygame", "rep_a", "ada@example.com")
	body, _ := json.Marshal(protocol.IngestRequest{Envelope: r.Claim("clm_1", true, "src/**")})
	if status, _, b, err := c.ingest(body, protocol.KindClaim); err != nil || status != http.StatusOK {
		t.Fatalf("ingest: %d %s %v", status, b, err)
	}
	// A refused request is logged, if at all, on stderr.
	c.do("POST", "/v1/claims", []byte(`{"envelope":`))
	s.signal(t, syscall.SIGTERM)
	if code := s.wait(t); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM (stderr: %s)", code, s.stderr)
	}
	if rest := s.stdout.String(); rest != "" {
		t.Fatalf("serve printed more than its one line on stdout: %q", rest)
	}
	if s.stderr.String() == "" {
		t.Fatal("serve logged nothing on stderr")
	}

	// A port in use: an error on stderr, no listening line, a failure status.
	s2 := startServe(t, data)
	addr := strings.TrimPrefix(s2.URL, "http://")
	out, errOut, code := runCLI(t, "serve", "--listen", addr, "--data", data)
	if code == 0 || out != "" || !strings.Contains(errOut, "listen") {
		t.Fatalf("serve on a busy port: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// Usage mistakes fail with nothing on stdout and a reason on stderr.
	for _, args := range [][]string{{"serve", "--data", data, "extra"}, {"serve", "--bogus"}, {"serve", "--retention", "soon"}, {"nonsense"}} {
		if out, errOut, code := runCLI(t, args...); code == 0 || out != "" || errOut == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want a failure, nothing, a reason", args, code, out, errOut)
		}
	}
}

// TestFlagMistakesExit2: a command-line mistake exits with status 2, as
// main.go's usageError documents and as an unexpected argument already
// does, whether the mistake is an argument or a flag.
func TestFlagMistakesExit2(t *testing.T) {
	data := t.TempDir()
	for _, args := range [][]string{
		{"serve", "--data", data, "extra"},  // a usageError: 2 today
		{"token", "create", "--data", data}, // a usageError: 2 today
		{"serve", "--bogus"},
		{"serve", "--retention", "soon"},
		{"token", "create", "--data", data, "--workspace", "w", "--bogus"},
		{"demo-game", "-palette", "sepia"},
	} {
		if _, errOut, code := runCLI(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, errOut)
		}
	}
}

func TestServeRetentionFlags(t *testing.T) {
	data := t.TempDir()
	tok := createToken(t, data, "mygame")
	s := startServe(t, data, "--retention", "50ms", "--sweep-every", "20ms")
	c := newClient(t, s.URL, tok)
	r := fixture.NewReplica("mygame", "rep_a", "ada@example.com")
	for i := range 3 {
		body, _ := json.Marshal(protocol.IngestRequest{Envelope: r.Intent(fmt.Sprintf("int_%d", i), "src/**")})
		if status, _, b, err := c.ingest(body, protocol.KindIntent); err != nil || status != http.StatusOK {
			t.Fatalf("ingest: %d %s %v", status, b, err)
		}
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		status, b, err := c.do("GET", "/v1/events?afterSequence=0&protocolVersion=2", nil)
		if err != nil || status != http.StatusOK {
			t.Fatalf("GET /v1/events: %d %s %v", status, b, err)
		}
		p, err := protocol.DecodePageResponse(b)
		if err != nil {
			t.Fatal(err)
		}
		if p.TooOld != nil && p.TooOld.ResyncFrom == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("--retention 50ms --sweep-every 20ms: nothing swept within 20s: %s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status, b, _ := c.do("GET", "/v1/events?afterSequence=0", nil); status != http.StatusGone {
		t.Fatalf("v1 read below the watermark: %d %s", status, b)
	}
}

// streamer is one client ingesting envelopes in order from its own replica.
type streamer struct {
	r      *fixture.Replica
	sent   [][]byte                         // every body tried, by clientSequence-1
	kinds  []protocol.Kind                  // and its endpoint
	acks   map[int64]protocol.IngestReceipt // clientSequence -> receipt
	failed int                              // index in sent of the envelope whose request failed, or -1
}

// stream ingests until a request fails at the transport (the server is
// gone) or stop is closed; a 503 from a server shutting down also ends it.
// Any other non-200 answer is a test failure.
func (s *streamer) stream(t *testing.T, c *client, stop <-chan struct{}, acked func()) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		e := s.r.Any(s.r.ID, i)
		body, _ := json.Marshal(protocol.IngestRequest{Envelope: e})
		s.sent = append(s.sent, body)
		s.kinds = append(s.kinds, e.Type.Kind())
		status, rc, b, err := c.ingest(body, e.Type.Kind())
		switch {
		case err != nil && status == 0:
			s.failed = len(s.sent) - 1
			return
		case err != nil:
			t.Errorf("%s/%d: %v", e.ReplicaID, e.ClientSequence, err)
			return
		case status == http.StatusServiceUnavailable:
			s.failed = len(s.sent) - 1
			return
		case status != http.StatusOK:
			t.Errorf("%s/%d: %d %s", e.ReplicaID, e.ClientSequence, status, b)
			return
		case rc.Duplicate || rc.ID != e.ID:
			t.Errorf("%s/%d: receipt %s", e.ReplicaID, e.ClientSequence, b)
			return
		}
		s.acks[e.ClientSequence] = *rc
		acked()
	}
}

// runStreams starts n streamers and returns them, a counter of receipts
// and a function that waits for all of them to end.
func runStreams(t *testing.T, c *client, n int, stop <-chan struct{}) ([]*streamer, func() int, func()) {
	return runStreamsAs(t, c, "rep_", n, stop)
}

// runStreamsAs is runStreams with replicas named prefix0, prefix1, ...
func runStreamsAs(t *testing.T, c *client, prefix string, n int, stop <-chan struct{}) ([]*streamer, func() int, func()) {
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	ss := make([]*streamer, n)
	for i := range ss {
		ss[i] = &streamer{r: fixture.NewReplica("mygame", fmt.Sprintf("%s%d", prefix, i), fmt.Sprintf("w%d@example.com", i)), acks: map[int64]protocol.IngestReceipt{}, failed: -1}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ss[i].stream(t, c, stop, func() { mu.Lock(); total++; mu.Unlock() })
		}()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return total }
	return ss, count, wg.Wait
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestKill9DuringIngest: SIGKILL the service in the middle of a stream of
// concurrent ingests, restart it on the same data, and let the clients
// retry what got no receipt: every acknowledged envelope is in the log once,
// at its acknowledged serverSequence, the log has no gaps, and resending an
// acknowledged envelope gets its original receipt.
func TestKill9DuringIngest(t *testing.T) {
	data := t.TempDir()
	tok := createToken(t, data, "mygame")
	s := startServe(t, data)
	c := newClient(t, s.URL, tok)
	stop := make(chan struct{})
	defer close(stop)
	ss, count, wait := runStreams(t, c, 8, stop)
	waitFor(t, "400 receipts", func() bool { return count() >= 400 })
	s.signal(t, syscall.SIGKILL)
	if code := s.wait(t); code != killedExitCode {
		t.Fatalf("serve exited %d, want killed", code)
	}
	wait()
	if t.Failed() {
		t.FailNow()
	}

	s = startServe(t, data)
	c = newClient(t, s.URL, tok)
	want := map[key]int64{}
	for _, st := range ss {
		for cs, rc := range st.acks {
			want[key{st.r.ID, cs}] = rc.ServerSequence
		}
	}
	acked := len(want)
	// Retry what got no receipt, as a client would, in order.
	retried, dupRetries := 0, 0
	for _, st := range ss {
		if st.failed < 0 {
			t.Fatalf("%s stopped without a failed request", st.r.ID)
		}
		for i := st.failed; i < len(st.sent); i++ {
			status, rc, b, err := c.ingest(st.sent[i], st.kinds[i])
			if err != nil || status != http.StatusOK {
				t.Fatalf("retry of %s/%d: %d %s %v", st.r.ID, i+1, status, b, err)
			}
			want[key{st.r.ID, int64(i + 1)}] = rc.ServerSequence
			retried++
			if rc.Duplicate {
				dupRetries++
			}
		}
	}
	// Resending acknowledged envelopes gets their original receipts.
	resent := 0
	for _, st := range ss {
		for i := 0; i < len(st.sent); i += 7 {
			orig, ok := st.acks[int64(i+1)]
			if !ok {
				continue
			}
			status, rc, b, err := c.ingest(st.sent[i], st.kinds[i])
			if err != nil || status != http.StatusOK || !rc.Duplicate || rc.ServerSequence != orig.ServerSequence || !rc.IngestedAt.Equal(orig.IngestedAt) || rc.ID != orig.ID {
				t.Fatalf("resend of acknowledged %s/%d: %d %s %v, want duplicate of %+v", st.r.ID, i+1, status, b, err, orig)
			}
			resent++
		}
	}
	// And the clients carry on after the crash.
	for _, st := range ss {
		e := st.r.Any(st.r.ID, 1000)
		body, _ := json.Marshal(protocol.IngestRequest{Envelope: e})
		status, rc, b, err := c.ingest(body, e.Type.Kind())
		if err != nil || status != http.StatusOK || rc.Duplicate {
			t.Fatalf("new envelope after restart: %d %s %v", status, b, err)
		}
		want[key{st.r.ID, e.ClientSequence}] = rc.ServerSequence
	}
	log := c.events(t)
	if len(log) != len(want) {
		t.Fatalf("log has %d operations, clients hold %d receipts", len(log), len(want))
	}
	wantLog(t, log, want)
	t.Logf("%d acknowledged before the kill, %d retried (%d had been logged), %d resent; log of %d", acked, retried, dupRetries, resent, len(log))
	s.signal(t, syscall.SIGTERM)
	s.wait(t)
}

// TestSIGTERMGraceful: SIGTERM in the middle of a stream of ingests makes
// serve exit 0, and everything it acknowledged is there after a restart.
func TestSIGTERMGraceful(t *testing.T) {
	data := t.TempDir()
	tok := createToken(t, data, "mygame")
	s := startServe(t, data)
	c := newClient(t, s.URL, tok)
	stop := make(chan struct{})
	defer close(stop)
	ss, count, wait := runStreams(t, c, 8, stop)
	waitFor(t, "300 receipts", func() bool { return count() >= 300 })
	s.signal(t, syscall.SIGTERM)
	if code := s.wait(t); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM, want 0 (stderr: %s)", code, s.stderr)
	}
	wait()
	if t.Failed() {
		t.FailNow()
	}
	if rest := s.stdout.String(); rest != "" {
		t.Fatalf("serve printed more on stdout: %q", rest)
	}

	s = startServe(t, data)
	c = newClient(t, s.URL, tok)
	want := map[key]int64{}
	sent := map[key]bool{}
	for _, st := range ss {
		for cs, rc := range st.acks {
			want[key{st.r.ID, cs}] = rc.ServerSequence
		}
		for i := range st.sent {
			sent[key{st.r.ID, int64(i + 1)}] = true
		}
	}
	got := wantLog(t, c.events(t), want)
	for k := range got {
		if !sent[k] {
			t.Fatalf("the log holds %v, which no client sent", k)
		}
	}
	t.Logf("%d acknowledged, %d logged", len(want), len(got))
	s.signal(t, syscall.SIGTERM)
	if code := s.wait(t); code != 0 {
		t.Fatalf("second serve exited %d", code)
	}
}

// TestNewLogger: every command logs text on stderr, at info, or debug with -v.
func TestNewLogger(t *testing.T) {
	var quiet, verbose bytes.Buffer
	for _, l := range []struct {
		buf     *bytes.Buffer
		verbose bool
	}{{&quiet, false}, {&verbose, true}} {
		log := newLogger(l.buf, l.verbose)
		log.Debug("details", "k", 1)
		log.Info("news", "k", 2)
	}
	if s := quiet.String(); strings.Contains(s, "details") || !strings.Contains(s, "level=INFO msg=news k=2") {
		t.Errorf("without -v: %q", s)
	}
	if s := verbose.String(); !strings.Contains(s, "level=DEBUG msg=details k=1") || !strings.Contains(s, "level=INFO msg=news k=2") {
		t.Errorf("with -v: %q", s)
	}
}

// presenceOf reads GET /v1/presence through c: each replica's status.
func presenceOf(t *testing.T, c *client) map[string]protocol.PresenceStatus {
	t.Helper()
	status, b, err := c.do("GET", "/v1/presence", nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("presence: %d %s %v", status, b, err)
	}
	var list struct {
		Items []protocol.RemotePresence `json:"items"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatalf("presence: %v in %s", err, b)
	}
	got := map[string]protocol.PresenceStatus{}
	for _, p := range list.Items {
		got[p.SenderReplicaID] = p.Status
	}
	return got
}

// TestServeKill9Presence: the service on SQLite is killed with replicas
// subscribed; the next one sets offline, once their heartbeat is a TTL
// old, the replicas that did not come back, and leaves online the one
// that resubscribed to it.
func TestServeKill9Presence(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	tok := createToken(t, data, "mygame")
	// Long enough for the next service to start and rep_back to
	// resubscribe before the dead one's heartbeat is a TTL old, on a
	// loaded machine too.
	env := []string{"CROSSCODE_HUB_INSTANCE_TTL=5s"}
	first := startServeEnv(t, env, "--data", data)
	fc := newClient(t, first.URL, tok)
	watch(t, first.URL, tok, "rep_gone")
	watch(t, first.URL, tok, "rep_back")
	for _, r := range []string{"rep_gone", "rep_back"} {
		body, _ := json.Marshal(protocol.PresenceUpdate{ReplicaID: r, ActorID: "p@example.com", SessionID: "ses_" + r, Status: protocol.PresenceOnline})
		if status, b, err := fc.do("POST", "/v1/presence", body); err != nil || status != http.StatusOK {
			t.Fatalf("presence: %d %s %v", status, b, err)
		}
	}
	first.signal(t, syscall.SIGKILL)
	first.wait(t)

	next := startServeEnv(t, env, "--data", data)
	watch(t, next.URL, tok, "rep_back")
	nc := newClient(t, next.URL, tok)
	// Polled, not watched: the next service may set rep_gone offline
	// before a watcher of it could subscribe (its first heartbeat comes
	// at its start, and the dead one's may be a TTL old by then).
	var got map[string]protocol.PresenceStatus
	waitFor(t, "rep_gone offline on the next service", func() bool {
		got = presenceOf(t, nc)
		return got["rep_gone"] == protocol.PresenceOffline
	})
	if got["rep_gone"] != protocol.PresenceOffline || got["rep_back"] != protocol.PresenceOnline {
		t.Fatalf("presence after the restart: %v, want rep_gone offline, rep_back online", got)
	}
}

// A wrong CROSSCODE_HUB_INSTANCE_TTL stops serve at once with a message
// that says what it wants.
func TestServeBadInstanceTTL(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"5", "10ms", "soon"} {
		cmd := command(t, "serve", "--listen", "127.0.0.1:0", "--data", t.TempDir())
		cmd.Env = append(cmd.Env, "CROSSCODE_HUB_INSTANCE_TTL="+v)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "CROSSCODE_HUB_INSTANCE_TTL") || !strings.Contains(stderr.String(), "at least 300ms") {
			t.Fatalf("TTL %q: %v, stdout %q, stderr %q", v, err, stdout.String(), stderr.String())
		}
	}
}
