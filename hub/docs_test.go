package hub_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/internal/testing/mddoc"
)

// docExchange is one request of docs/coordination-protocol.md and the
// answer the page shows for it.
type docExchange struct {
	line               int
	method, path, auth string
	body               string
	status             int
	header             http.Header
	answer             string
}

// parseHTTPBlock splits an ```http block into its first line, its headers
// and its body.
func parseHTTPBlock(text string) (first string, header http.Header, body string) {
	header = http.Header{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	if sc.Scan() {
		first = strings.TrimSpace(sc.Text())
	}
	for sc.Scan() {
		l := sc.Text()
		if strings.TrimSpace(l) == "" {
			break
		}
		k, v, _ := strings.Cut(l, ":")
		header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	var b strings.Builder
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	return first, header, strings.TrimSpace(b.String())
}

// docExchanges reads the page's ```http blocks, a request followed by its
// answer each time.
func docExchanges(t *testing.T) []docExchange {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "docs", "coordination-protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []docExchange
	var req *docExchange
	for _, b := range mddoc.Blocks(string(src)) {
		if b.Lang != "http" {
			continue
		}
		first, header, body := parseHTTPBlock(b.Text)
		f := strings.Fields(first)
		switch {
		case len(f) >= 2 && strings.HasPrefix(f[0], "HTTP/"):
			if req == nil {
				t.Fatalf("docs/coordination-protocol.md:%d: an answer without its request", b.Line)
			}
			req.status, _ = strconv.Atoi(f[1])
			req.header, req.answer = header, body
			out = append(out, *req)
			req = nil
		case len(f) == 3 && f[2] == "HTTP/1.1":
			if req != nil {
				t.Fatalf("docs/coordination-protocol.md:%d: a request without its answer", req.line)
			}
			req = &docExchange{line: b.Line, method: f[0], path: f[1], auth: header.Get("Authorization"), body: body}
		default:
			t.Fatalf("docs/coordination-protocol.md:%d: an http block that is neither a request nor an answer: %q", b.Line, first)
		}
	}
	if req != nil {
		t.Fatalf("docs/coordination-protocol.md:%d: a request without its answer", req.line)
	}
	return out
}

// TestCoordinationProtocolDocSession sends each request of the page's
// session, in order, to a fresh service, and checks that it answers what
// the page shows: the status, the headers shown, and the JSON, where the
// times the service assigns (ingestedAt, updatedAt) may differ from the
// page's, but consistently: a time the page shows twice is one time.
func TestCoordinationProtocolDocSession(t *testing.T) {
	exs := docExchanges(t)
	if len(exs) < 10 {
		t.Fatalf("found %d exchanges in docs/coordination-protocol.md; the extraction is broken", len(exs))
	}
	h := newHub(t, hub.Config{})
	times := map[string]string{} // the page's time -> the service's
	for _, ex := range exs {
		var body []byte
		if ex.body != "" {
			body = []byte(ex.body)
		}
		token := ""
		if tok, ok := strings.CutPrefix(ex.auth, "Bearer "); ok && tok != "" {
			token = h.Token
		}
		a := h.mustDo(t, ex.method, ex.path, token, body)
		where := fmt.Sprintf("docs/coordination-protocol.md:%d: %s %s", ex.line, ex.method, ex.path)
		if a.Status != ex.status {
			t.Errorf("%s: status %d, the page says %d\n%s", where, a.Status, ex.status, a.Body)
			continue
		}
		for k, vs := range ex.header {
			if got := a.Header.Values(k); !reflect.DeepEqual(got, vs) {
				t.Errorf("%s: header %s is %q, the page says %q", where, k, got, vs)
			}
		}
		var want, got any
		if err := json.Unmarshal([]byte(ex.answer), &want); err != nil {
			t.Fatalf("%s: the page's answer is not JSON: %v", where, err)
		}
		if err := json.Unmarshal(a.Body, &got); err != nil {
			t.Fatalf("%s: the service's answer is not JSON: %v\n%s", where, err, a.Body)
		}
		if diff := sameJSON("", want, got, times); diff != "" {
			t.Errorf("%s: the answer differs from the page's at %s\nservice: %s", where, diff, a.Body)
		}
	}
}

// serviceTimes are the fields whose values the service assigns.
var serviceTimes = map[string]bool{"ingestedAt": true, "updatedAt": true}

// sameJSON compares the page's value with the service's and returns where
// they first differ ("" when they do not).
func sameJSON(path string, want, got any, times map[string]string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s (page %v, service %v)", orRoot(path), want, got)
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return fmt.Sprintf("%s.%s (missing)", path, k)
			}
			if ws, isStr := wv.(string); isStr && serviceTimes[k] {
				gs, _ := gv.(string)
				if prev, seen := times[ws]; seen && prev != gs {
					return fmt.Sprintf("%s.%s: the page shows %s twice, the service answered %s, then %s", path, k, ws, prev, gs)
				}
				times[ws] = gs
				continue
			}
			if d := sameJSON(path+"."+k, wv, gv, times); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s (page %d items, service %v)", orRoot(path), len(w), got)
		}
		for i := range w {
			if d := sameJSON(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], times); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(want, got) {
		return fmt.Sprintf("%s (page %v, service %v)", orRoot(path), want, got)
	}
	return ""
}

func orRoot(p string) string {
	if p == "" {
		return "the top"
	}
	return p
}
