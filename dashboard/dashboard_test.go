package dashboard_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/dashboard"
)

// TestPageHeaders: the page and its assets carry the strict CSP and
// friends; unknown assets are a JSON 404; the page's read endpoint needs
// the token.
func TestPageHeaders(t *testing.T) {
	s := newService(t, nil)
	for _, path := range []string{"/", "/assets/main.js", "/assets/style.css"} {
		status, body, h, err := get(s.URL+path, "")
		if err != nil || status != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, status, err)
		}
		if got := h.Get("Content-Security-Policy"); got != dashboard.CSP {
			t.Errorf("GET %s: CSP %q", path, got)
		}
		for k, v := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"} {
			if h.Get(k) != v {
				t.Errorf("GET %s: %s = %q, want %q", path, k, h.Get(k), v)
			}
		}
		if path == "/" && (strings.Contains(string(body), "<script>") || strings.Contains(string(body), "style=")) {
			t.Errorf("the page has inline script or style")
		}
	}
	for _, path := range []string{"/assets/nope.js", "/assets/../dashboard.go", "/assets/index.html"} {
		if status, body, _, _ := get(s.URL+path, ""); status != http.StatusNotFound || !strings.Contains(string(body), "NOT_FOUND") {
			t.Errorf("GET %s: %d %s, want a JSON 404", path, status, body)
		}
	}
	if status, _, _, _ := get(s.URL+"/v1/workspace", ""); status != http.StatusUnauthorized {
		t.Errorf("GET /v1/workspace without a token: %d, want 401", status)
	}
	status, body, _, err := get(s.URL+"/v1/workspace", s.Token)
	var ans struct {
		WorkspaceID string   `json:"workspaceId"`
		Features    []string `json:"features"`
	}
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &ans) != nil || ans.WorkspaceID != wsName {
		t.Fatalf("GET /v1/workspace: %d %s %v", status, body, err)
	}
	// The service asks the user for a token.
	res, err := http.Post(s.URL+"/dashboard/session", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	var mode struct{ Mode, Token string }
	json.NewDecoder(res.Body).Decode(&mode)
	res.Body.Close()
	if mode.Mode != "service" || mode.Token != "" {
		t.Errorf("POST /dashboard/session on the service: %+v", mode)
	}
}
