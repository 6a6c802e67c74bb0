package agentclients

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"strings"
	"testing"
)

// TestGeminiAdapter reads the shapes of tool results Gemini CLI sends (its
// images after the functionResponse, or in its parts for gemini-3-*
// models; a failure in response.error) and answers in its stream format.
func TestGeminiAdapter(t *testing.T) {
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 4, 3))); err != nil {
		t.Fatal(err)
	}
	pic := map[string]any{"inlineData": map[string]any{"mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(buf.Bytes())}}
	out := "<untrusted_context>\n{\"note\":\"&lt;/untrusted_context&gt;\"}\n</untrusted_context>\n[Tool 'run_scenario' provided the following image data with mime-type: image/png]"
	var got []*Request
	m := NewModel(t, mountGemini, func(r *Request) Reply {
		got = append(got, r)
		return Reply{Calls: []Call{{ID: "call_9", Name: "mcp_crosscode_claim", Args: map[string]any{"patterns": []string{"a"}}}}}
	})
	post := func(verb string, body map[string]any) string {
		b, _ := json.Marshal(body)
		resp, err := http.Post(m.URL+"/v1beta/models/gemini-x:"+verb+"?alt=sse", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var s strings.Builder
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			s.WriteString(sc.Text() + "\n")
		}
		return s.String()
	}
	tools := []any{map[string]any{"functionDeclarations": []any{map[string]any{"name": "mcp_crosscode_claim"}, map[string]any{"name": "mcp_crosscode_run_scenario"}}}}
	user := func(parts ...any) map[string]any { return map[string]any{"role": "user", "parts": parts} }
	fr := func(id string, response map[string]any, parts ...any) map[string]any {
		f := map[string]any{"id": "mcp_crosscode_run_scenario__" + id, "name": "mcp_crosscode_run_scenario", "response": response}
		if parts != nil {
			f["parts"] = parts
		}
		return map[string]any{"functionResponse": f}
	}
	sse := post("streamGenerateContent", map[string]any{"tools": tools, "contents": []any{
		user(map[string]any{"text": "hello"}),
		user(fr("call_1", map[string]any{"output": out}), pic),
	}})
	post("streamGenerateContent", map[string]any{"tools": tools, "contents": []any{
		user(fr("call_2", map[string]any{"output": out}, pic)),
	}})
	post("streamGenerateContent", map[string]any{"tools": tools, "contents": []any{
		user(fr("call_3", map[string]any{"error": "MCP tool 'run_scenario' reported tool error"})),
	}})
	side := post("generateContent", map[string]any{"contents": []any{user(map[string]any{"text": "rate it"})}, "generationConfig": map[string]any{
		"responseMimeType": "application/json", "responseJsonSchema": map[string]any{"type": "OBJECT", "properties": map[string]any{"complexity_score": map[string]any{"type": "INTEGER"}}},
	}})
	for _, f := range m.Failures() {
		t.Error(f)
	}
	if len(got) != 3 {
		t.Fatalf("the script saw %d requests, want 3 (the side request is not its)", len(got))
	}
	if !strings.HasPrefix(sse, "data: {") || !strings.Contains(sse, `"functionCall":{"args":{"patterns":["a"]},"id":"call_9","name":"mcp_crosscode_claim"}`) {
		t.Errorf("stream: %s", sse)
	}
	if !strings.Contains(side, `{\"complexity_score\":1}`) {
		t.Errorf("side answer: %s", side)
	}
	if got[0].Context != "hello" || got[0].Tool("claim") != "mcp_crosscode_claim" {
		t.Errorf("context %q, tools %v", got[0].Context, got[0].Tools)
	}
	for i, r := range got[:2] {
		if len(r.Results) != 1 {
			t.Fatalf("request %d: %d results", i+1, len(r.Results))
		}
		res := r.Results[0]
		if res.CallID != "call_"+string(rune('1'+i)) || res.Text != `{"note":"</untrusted_context>"}` || res.IsError || !res.ErrorFlag {
			t.Errorf("request %d: %+v", i+1, res)
		}
		if len(res.Images) != 1 || res.Images[0].Width != 4 || res.Images[0].Height != 3 {
			t.Errorf("request %d: images %+v", i+1, res.Images)
		}
	}
	if res := got[2].Results[0]; !res.IsError || res.Text != "MCP tool 'run_scenario' reported tool error" || len(res.Images) != 0 {
		t.Errorf("the failure: %+v", res)
	}
}
