package protocol

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/mddoc"
)

// The two protocol documents under docs/ show their messages as JSON. Each
// example must be what the decoders accept, strictly, so the pages cannot
// drift from the code. A ```jsonc block is a transcript: one message after
// another, each after a comment naming who sends it ("// adapter",
// "// controller", "// client", "// service"), which is checked too.

// docExamples returns the JSON values of a document's json and jsonc
// blocks, each with where it is and who sends it ("" when not said).
func docExamples(t *testing.T, name string) []docExample {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "docs", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []docExample
	for _, b := range mddoc.Blocks(string(src)) {
		if b.Lang != "json" && b.Lang != "jsonc" {
			continue
		}
		// Comments become blank lines, so a value's line stays right; the
		// sender of each value is the comment before it.
		lines := strings.Split(b.Text, "\n")
		senderAt := make([]string, len(lines))
		sender := ""
		for i, l := range lines {
			if c, ok := strings.CutPrefix(strings.TrimSpace(l), "//"); ok {
				if b.Lang != "jsonc" {
					t.Fatalf("%s:%d: a comment in a json block (use jsonc)", name, b.Line+1+i)
				}
				word, _, _ := strings.Cut(strings.TrimSpace(c), ":")
				sender = strings.TrimSpace(word)
				lines[i] = ""
			}
			senderAt[i] = sender
		}
		text := strings.Join(lines, "\n")
		dec := json.NewDecoder(strings.NewReader(text))
		for {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s: the block at line %d is not JSON: %v", name, b.Line, err)
			}
			end := int(dec.InputOffset())
			start := end - len(raw)
			for start > 0 && text[start-1] != '\n' && strings.TrimSpace(text[start-1:start]) == "" {
				start--
			}
			line := strings.Count(text[:start], "\n")
			// Skip the blank lines before the value.
			for line < len(lines) && strings.TrimSpace(lines[line]) == "" {
				line++
			}
			ex := docExample{where: fmt.Sprintf("%s:%d", name, b.Line+1+line), raw: raw}
			if b.Lang == "jsonc" && line < len(senderAt) {
				ex.sender = senderAt[line]
			}
			out = append(out, ex)
		}
	}
	return out
}

type docExample struct {
	where, sender string
	raw           json.RawMessage
}

// fields returns the top-level keys of a JSON object.
func fields(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	json.Unmarshal(raw, &m)
	return m
}

func typeOf(raw json.RawMessage) string {
	var h struct {
		Type string `json:"type"`
	}
	json.Unmarshal(raw, &h)
	return h.Type
}

var adapterTypes = []string{"hello", "scenarios", "ready", "started", "event", "completed", "failed", "pong", "frame",
	"actions", "stepped", "step_refused", "inspect_result", "warnings"}

// controllerMessage decodes a controller's message as strictly as the
// adapter library's decoder would tolerantly, and checks its values.
func controllerMessage(raw json.RawMessage) error {
	typ, v, err := DecodeControllerMessage(raw)
	if err != nil {
		return err
	}
	// The same again, strictly: the page shows no field the code lacks.
	if err := decodeStrict(raw, v, ""); err != nil {
		return err
	}
	c := &checker{}
	switch m := v.(type) {
	case *Welcome:
		if m.Protocol != CappyProtocolVersion || m.Controller.Name == "" {
			return fmt.Errorf("welcome: protocol %d, controller %q", m.Protocol, m.Controller.Name)
		}
	case *Reject:
		c.text("code", m.Code, 128, true)
		c.text("message", m.Message, MaxTextBytes, true)
	case *PrepareScenario:
		c.id("op", m.Op, true)
		c.id("scenario", m.Scenario, true)
		if err := m.Presentation.Check(nil); err != nil {
			return err
		}
		if m.Frames != nil {
			if err := m.Frames.Validate(); err != nil {
				return err
			}
		}
	case *RecordStart:
		c.id("op", m.Op, true)
		if m.Control != "" && m.Control != ControlAgent {
			return fmt.Errorf("control %q", m.Control)
		}
		if m.Frames != nil {
			if err := m.Frames.Validate(); err != nil {
				return err
			}
		}
	case *PrepareReplay:
		c.id("op", m.Op, true)
		if err := m.Presentation.Check(nil); err != nil {
			return err
		}
		if m.Replay == nil {
			return fmt.Errorf("prepare_replay without replay")
		}
		if err := checkDocReplay(m.Replay); err != nil {
			return err
		}
	case *OpMessage:
		c.id("op", m.Op, true)
	case *Ping:
		if typ != "ping" {
			return fmt.Errorf("a %s from the controller", typ)
		}
		c.text("nonce", m.Nonce, 256, true)
	case *CappyError:
		c.text("code", m.Code, 128, true)
		c.id("op", m.Op, false)
	case *Step:
		return CheckStep(m, nil)
	case *Inspect:
		c.stepID("id", m.ID)
		c.text("query", m.Query, MaxInspectQuery, false)
	}
	return c.result()
}

// checkDocReplay checks a replay payload; an inline one must also decode
// to its hash.
func checkDocReplay(r *ReplayPayload) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if r.Kind == "inline" {
		_, err := r.DecodeInline()
		return err
	}
	return nil
}

func TestAdapterProtocolDocExamples(t *testing.T) {
	exs := docExamples(t, "adapter-protocol.md")
	seen := map[string]bool{}
	for _, ex := range exs {
		typ := typeOf(ex.raw)
		var err error
		switch {
		case typ == "" && fields(ex.raw)["kind"] != nil: // a replay payload
			var r ReplayPayload
			if err = decodeStrict(ex.raw, &r, ""); err == nil {
				err = checkDocReplay(&r)
			}
			typ = "replay payload"
		case typ == "" && fields(ex.raw)["fps"] != nil: // a frames request
			var r FramesRequest
			if err = decodeStrict(ex.raw, &r, ""); err == nil {
				err = r.Validate()
			}
			typ = "frames request"
		case slices.Contains(adapterTypes, typ):
			if ex.sender != "" && ex.sender != "adapter" {
				t.Errorf("%s: %s is an adapter's message, but the page says the %s sends it", ex.where, typ, ex.sender)
			}
			_, err = DecodeAdapterMessage(ex.raw)
		default:
			if ex.sender != "" && ex.sender != "controller" {
				t.Errorf("%s: %s is the controller's message, but the page says the %s sends it", ex.where, typ, ex.sender)
			}
			err = controllerMessage(ex.raw)
		}
		if err != nil {
			t.Errorf("%s: %s: %v\n%s", ex.where, typ, err, ex.raw)
		}
		seen[typ] = true
	}
	// Every message of the protocol has an example.
	want := append(slices.Clone(adapterTypes), "welcome", "reject", "prepare_scenario", "record_start", "prepare_replay",
		"start", "stop", "cancel", "ping", "error", "step", "inspect", "replay payload", "frames request")
	for _, typ := range want {
		if !seen[typ] {
			t.Errorf("docs/adapter-protocol.md shows no %s", typ)
		}
	}
}

// health is the answer of GET /healthz.
type health struct {
	Status          string `json:"status"`
	ProtocolVersion int    `json:"protocolVersion"`
	SchemaVersion   int    `json:"schemaVersion"`
}

// coordinationExample decodes one example of the coordination protocol
// and names what it is.
func coordinationExample(raw json.RawMessage) (string, error) {
	f := fields(raw)
	typ := typeOf(raw)
	has := func(k string) bool { return f[k] != nil }
	switch {
	case has("envelope"):
		var req struct {
			Envelope struct {
				Type EventType `json:"type"`
			} `json:"envelope"`
		}
		json.Unmarshal(raw, &req)
		_, err := DecodeIngestRequest(raw, req.Envelope.Type.Kind())
		return "ingest request", err
	case has("schemaVersion") && has("payload"):
		e, err := DecodeEnvelope(raw)
		if err == nil {
			return "envelope " + string(e.Type), nil
		}
		return "envelope", err
	case has("error"):
		var b ErrorBody
		if err := decodeStrict(raw, &b, ""); err != nil {
			return "error", err
		}
		if !slices.Contains(errorCodes, b.Error.Code) || b.Error.Message == "" {
			return "error", fmt.Errorf("code %q, message %q", b.Error.Code, b.Error.Message)
		}
		return "error", nil
	case has("status") && has("schemaVersion"):
		var h health
		if err := decodeStrict(raw, &h, ""); err != nil {
			return "health", err
		}
		if h != (health{"ok", ProtocolVersion, SchemaVersion}) {
			return "health", fmt.Errorf("%+v", h)
		}
		return "health", nil
	case has("status") && !has("replicaId") && !has("workspaceId"):
		p, err := DecodePageResponse(raw)
		if err == nil && p.TooOld != nil {
			return "cursor-too-old", nil
		}
		return "page", err
	case has("items"):
		var items []json.RawMessage
		if err := json.Unmarshal(f["items"], &items); err != nil {
			return "items", err
		}
		if len(items) > 0 && fields(items[0])["senderReplicaId"] != nil {
			var list struct {
				Items []RemotePresence `json:"items"`
			}
			return "presence list", decodeStrict(raw, &list, "")
		}
		var p Page
		return "page, version 1", decodeStrict(raw, &p, "")
	case has("serverSequence") && has("duplicate"):
		var r IngestReceipt
		err := decodeStrict(raw, &r, "")
		if err == nil && (r.ServerSequence < 1 || r.IngestedAt.IsZero()) {
			err = fmt.Errorf("%+v", r)
		}
		return "receipt", err
	case typ == "subscribe":
		_, err := DecodeWSSubscribe(raw)
		return typ, err
	case typ == "subscribed":
		var s WSSubscribed
		return typ, decodeStrict(raw, &s, "")
	case typ == "error":
		var e WSError
		if err := decodeStrict(raw, &e, ""); err != nil {
			return "ws error", err
		}
		if !slices.Contains(errorCodes, e.Code) {
			return "ws error", fmt.Errorf("code %q", e.Code)
		}
		return "ws error", nil
	case slices.Contains(FanOutTypes, typ):
		var fo FanOut
		return "fan-out " + typ, json.Unmarshal(raw, &fo)
	case has("senderReplicaId"):
		var p RemotePresence
		return "presence", decodeStrict(raw, &p, "")
	case has("replicaId") && has("status"):
		_, err := DecodePresenceUpdate(raw)
		return "presence update", err
	}
	return "", fmt.Errorf("this test does not know what this example is: teach it")
}

var errorCodes = []ErrorCode{CodeSchemaInvalid, CodeUnauthenticated, CodeForbidden, CodeNotFound, CodeMethodNotAllowed, CodeIDConflict,
	CodeClientSequenceRegression, CodeUnknownEntity, CodeCursorTooOld, CodePayloadTooLarge, CodeSlowConsumer, CodeUnavailable, CodeInternal}

func TestCoordinationProtocolDocExamples(t *testing.T) {
	exs := docExamples(t, "coordination-protocol.md")
	seen := map[string]bool{}
	for _, ex := range exs {
		what, err := coordinationExample(ex.raw)
		if err != nil {
			t.Errorf("%s: %s: %v\n%s", ex.where, what, err, ex.raw)
		}
		switch {
		case ex.sender == "client" && what != "subscribe",
			ex.sender == "service" && (what == "subscribe" || what == "presence update"):
			t.Errorf("%s: a %s, but the page says the %s sends it", ex.where, what, ex.sender)
		}
		seen[what] = true
	}
	want := []string{"envelope", "receipt", "page", "cursor-too-old", "subscribe", "subscribed", "ws error", "fan-out claim",
		"fan-out presence", "presence update", "error"}
	for _, w := range want {
		found := false
		for s := range seen {
			if strings.HasPrefix(s, w) {
				found = true
			}
		}
		if !found {
			t.Errorf("docs/coordination-protocol.md shows no %s", w)
		}
	}
	// Every payload kind has an example envelope.
	for _, k := range Kinds {
		found := false
		for s := range seen {
			if e, ok := strings.CutPrefix(s, "envelope "); ok && EventType(e).Kind() == k {
				found = true
			}
		}
		if !found {
			t.Errorf("docs/coordination-protocol.md shows no envelope of a %s", k)
		}
	}
}
