package main

import (
	"bufio"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crosscode/crosscode-mcp/internal/testing/browsertest"
)

// dashboardURL is the one line `crosscode-mcp dashboard` prints.
var dashboardURL = regexp.MustCompile(`^(http://127\.0\.0\.1:\d+)/login\?secret=[A-Za-z0-9_-]{43}$`)

// startDashboard runs `crosscode-mcp dashboard` in repo and returns its
// URL, its base and its stderr.
func startDashboard(t *testing.T, repo string, args ...string) (url, base string, stderr *syncBuffer) {
	t.Helper()
	cmd := command(t, append([]string{"dashboard", "--repo", repo}, args...)...)
	stderr = &syncBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	rest := &syncBuffer{}
	exited := make(chan struct{})
	go func() {
		br := bufio.NewReader(out)
		line, _ := br.ReadString('\n')
		lines <- line
		io.Copy(rest, br)
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if rest.String() != "" {
			t.Errorf("dashboard printed more than its URL on stdout: %q", rest.String())
		}
	})
	select {
	case line := <-lines:
		m := dashboardURL.FindStringSubmatch(strings.TrimSuffix(line, "\n"))
		if m == nil {
			t.Fatalf("dashboard printed %q, want one URL with a secret (stderr: %s)", line, stderr)
		}
		return m[0], m[1], stderr
	case <-time.After(60 * time.Second):
		t.Fatalf("dashboard printed nothing within 60 s (stderr: %s)", stderr)
	}
	return "", "", nil
}

// TestDashboardLocalMode: `crosscode-mcp dashboard` in a repository shows,
// in a real browser, a claim an MCP client (a real stdio server process)
// just made there; without its secret the URL gives nothing.
func TestDashboardLocalMode(t *testing.T) {
	repo := gitRepo(t)
	url, base, stderr := startDashboard(t, repo)
	for _, path := range []string{"/", "/v1/events", "/login?secret=guess"} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized && res.StatusCode != http.StatusForbidden || strings.Contains(string(body), "<html") {
			t.Errorf("GET %s without the secret: %d %s", path, res.StatusCode, body)
		}
	}

	ada := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo})
	if got := ada.call("claim", map[string]any{"patterns": []string{"src/game/**"}, "reason": "boss fight", "exclusive": true}); got["status"] != "granted" {
		t.Fatalf("claim: %v", got)
	}
	b := browsertest.New(t, 1280, 800)
	b.Must(chromedp.Navigate(url))
	b.WaitTrue(wait, `document.querySelector('#live').dataset.state === 'live'`)
	b.Must(chromedp.KeyEvent("2"))
	b.WaitTrue(wait, `[...document.querySelectorAll('tr[data-claim]')].some((tr) => tr.innerText.includes('src/game/**') && tr.innerText.includes('boss fight'))`)
	// And one made while the page is open arrives without a reload.
	if got := ada.call("claim", map[string]any{"patterns": []string{"assets/boss/*.png"}, "reason": "boss sprites"}); got["status"] != "granted" {
		t.Fatalf("claim: %v", got)
	}
	b.WaitTrue(wait, `[...document.querySelectorAll('tr[data-claim]')].some((tr) => tr.innerText.includes('assets/boss/*.png'))`)
	b.Screenshot(browsertest.ArtifactDir(t), "local-claims")

	// The secret worked once; the URL is now worthless.
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("the URL a second time: %d, want 403", res.StatusCode)
	}
	secret := url[strings.Index(url, "secret=")+len("secret="):]
	if strings.Contains(stderr.String(), secret) {
		t.Error("the secret reached the log")
	}
	if errs := b.Errors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestDashboardRefusesOtherAddresses: loopback only, and not for a service.
func TestDashboardRefusesOtherAddresses(t *testing.T) {
	repo := gitRepo(t)
	for _, args := range [][]string{
		{"dashboard", "--repo", repo, "--listen", "0.0.0.0:0"},
		{"dashboard", "--repo", repo, "--listen", "192.168.1.4:7000"},
		{"dashboard", "--repo", repo, "--service", "http://127.0.0.1:7420", "--token", "t"},
	} {
		out, errOut, code := runCLI(t, args...)
		if code != 2 || out != "" || errOut == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

// wait bounds every wait for the page (it ends as soon as its condition holds).
const wait = 60 * time.Second
