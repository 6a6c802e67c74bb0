package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func readExample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var envelopeExamples = map[string]EventType{
	"claim-created.json":         EventClaimCreated,
	"claim-created-waiting.json": EventClaimCreated,
	"claim-released.json":        EventClaimReleased,
	"handoff-requested.json":     EventHandoffRequested,
	"handoff-responded.json":     EventHandoffResponded,
	"intent-published.json":      EventIntentPublished,
	"task-created.json":          EventTaskCreated,
	"task-updated.json":          EventTaskUpdated,
	"transaction-created.json":   EventTransactionCreated,
	"validation-completed.json":  EventValidationComplete,
}

func TestExamplesDecode(t *testing.T) {
	seen := map[EventType]bool{}
	for name, typ := range envelopeExamples {
		t.Run(name, func(t *testing.T) {
			e, err := DecodeEnvelope(readExample(t, name))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if e.Type != typ || e.Payload.EntityID() != e.ID {
				t.Fatalf("got type %q id %q payload id %q", e.Type, e.ID, e.Payload.EntityID())
			}
			if e.Agent == nil || e.Agent.Provider == "" || e.Agent.SessionReference == "" {
				t.Fatalf("agent not decoded: %+v", e.Agent)
			}
			// The canonical form decodes back to the same envelope and is stable.
			c1, err := e.Canonical()
			if err != nil {
				t.Fatal(err)
			}
			e2, err := DecodeEnvelope(c1)
			if err != nil {
				t.Fatalf("canonical does not decode: %v\n%s", err, c1)
			}
			if !reflect.DeepEqual(e, e2) {
				t.Fatalf("round trip differs:\n%+v\n%+v", e, e2)
			}
			c2, _ := e2.Canonical()
			if !bytes.Equal(c1, c2) {
				t.Fatalf("canonical form unstable:\n%s\n%s", c1, c2)
			}
			// Ingest through its own endpoint only.
			body := append(append([]byte(`{"envelope":`), readExample(t, name)...), '}')
			if _, err := DecodeIngestRequest(body, typ.Kind()); err != nil {
				t.Fatalf("ingest on own endpoint: %v", err)
			}
			for _, k := range Kinds {
				if k == typ.Kind() {
					continue
				}
				_, err := DecodeIngestRequest(body, k)
				assertField(t, err, "envelope.type")
			}
		})
		seen[typ] = true
	}
	if len(seen) != len(EventTypes) {
		t.Fatalf("examples cover %d of %d event types", len(seen), len(EventTypes))
	}

	if _, err := DecodeIngestRequest(readExample(t, "ingest-request.json"), KindClaim); err != nil {
		t.Fatalf("ingest-request: %v", err)
	}
	var rcpt IngestReceipt
	if err := decodeStrict(readExample(t, "ingest-receipt.json"), &rcpt, ""); err != nil || rcpt.ServerSequence != 42 || rcpt.IngestedAt.Nanosecond() != 123e6 {
		t.Fatalf("ingest-receipt: %v %+v", err, rcpt)
	}
	pr, err := DecodePageResponse(readExample(t, "events-page-v2.json"))
	if err != nil || pr.Page == nil || len(pr.Page.Items) != 1 || pr.Page.Items[0].ServerSequence != 42 || pr.Page.Items[0].IngestedAt == nil {
		t.Fatalf("events-page-v2: %v %+v", err, pr)
	}
	pr, err = DecodePageResponse(readExample(t, "cursor-too-old-v2.json"))
	if err != nil || pr.TooOld == nil || pr.TooOld.ResyncFrom != 1200 || pr.TooOld.RetentionDays != 30 {
		t.Fatalf("cursor-too-old-v2: %v %+v", err, pr)
	}
	var f FanOut
	if err := json.Unmarshal(readExample(t, "fanout-claim.json"), &f); err != nil || f.Claim == nil || f.Claim.ServerSequence != 42 || f.Claim.Claim.ID != "clm_01" {
		t.Fatalf("fanout-claim: %v %+v", err, f)
	}
	out, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, out, readExample(t, "fanout-claim.json")) {
		t.Fatalf("fan-out re-encodes differently:\n%s", out)
	}
}

func TestNewFanOutMatchesExample(t *testing.T) {
	pr, err := DecodePageResponse(readExample(t, "events-page-v2.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(NewFanOut(pr.Page.Items[0]))
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, out, readExample(t, "fanout-claim.json")) {
		t.Fatalf("NewFanOut:\n%s", out)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

func assertField(t *testing.T, err error, field string) {
	t.Helper()
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("want a FieldError on %q, got %v", field, err)
	}
	if fe.Field != field {
		t.Fatalf("want error on field %q, got %q (%v)", field, fe.Field, fe)
	}
}

// mutate decodes the claim example into a generic map, applies f and
// re-encodes it.
func mutate(t *testing.T, name string, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(readExample(t, name), &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func payload(m map[string]any) map[string]any { return m["payload"].(map[string]any) }

func TestEnvelopeRejections(t *testing.T) {
	cases := []struct {
		name, example, field string
		f                    func(m map[string]any)
	}{
		{"unknown envelope field", "claim-created.json", "colour", func(m map[string]any) { m["colour"] = "red" }},
		{"unknown payload field", "claim-created.json", "payload.colour", func(m map[string]any) { payload(m)["colour"] = "red" }},
		{"schemaVersion 2", "claim-created.json", "schemaVersion", func(m map[string]any) { m["schemaVersion"] = 2 }},
		{"schemaVersion missing", "claim-created.json", "schemaVersion", func(m map[string]any) { delete(m, "schemaVersion") }},
		{"schemaVersion string", "claim-created.json", "schemaVersion", func(m map[string]any) { m["schemaVersion"] = "1" }},
		{"id differs from payload.id", "claim-created.json", "payload.id", func(m map[string]any) { payload(m)["id"] = "clm_02" }},
		{"workspace differs", "claim-created.json", "payload.workspaceId", func(m map[string]any) { payload(m)["workspaceId"] = "other" }},
		{"unknown type", "claim-created.json", "type", func(m map[string]any) { m["type"] = "claim.stolen" }},
		{"missing type", "claim-created.json", "type", func(m map[string]any) { delete(m, "type") }},
		{"missing payload", "claim-created.json", "payload", func(m map[string]any) { delete(m, "payload") }},
		{"null payload", "claim-created.json", "payload", func(m map[string]any) { m["payload"] = nil }},
		{"bad provider", "claim-created.json", "agent.provider", func(m map[string]any) { m["agent"].(map[string]any)["provider"] = "chatgpt" }},
		{"bad createdAt", "claim-created.json", "createdAt", func(m map[string]any) { m["createdAt"] = "yesterday" }},
		{"missing createdAt", "claim-created.json", "createdAt", func(m map[string]any) { delete(m, "createdAt") }},
		{"bad payload time", "claim-created.json", "payload.expiresAt", func(m map[string]any) { payload(m)["expiresAt"] = "2026-13-01T00:00:00Z" }},
		{"expiry before creation", "claim-created.json", "payload.expiresAt", func(m map[string]any) { payload(m)["expiresAt"] = "2026-11-29T10:00:00Z" }},
		{"negative clientSequence", "claim-created.json", "clientSequence", func(m map[string]any) { m["clientSequence"] = -1 }},
		{"fractional clientSequence", "claim-created.json", "clientSequence", func(m map[string]any) { m["clientSequence"] = 1.5 }},
		{"missing actor", "claim-created.json", "actorId", func(m map[string]any) { delete(m, "actorId") }},
		{"empty patterns", "claim-created.json", "payload.patterns", func(m map[string]any) { payload(m)["patterns"] = []string{} }},
		{"absolute pattern", "claim-created.json", "payload.patterns[0]", func(m map[string]any) { payload(m)["patterns"] = []string{"/etc/passwd"} }},
		{"dotdot pattern", "claim-created.json", "payload.patterns[1]", func(m map[string]any) { payload(m)["patterns"] = []string{"a", "../b"} }},
		{"bad glob", "claim-created.json", "payload.patterns[0]", func(m map[string]any) { payload(m)["patterns"] = []string{"src/[a"} }},
		{"released on create", "claim-created.json", "payload.releasedAt", func(m map[string]any) { payload(m)["releasedAt"] = "2026-11-29T10:20:00Z" }},
		{"wait before creation", "claim-created-waiting.json", "payload.waitUntil", func(m map[string]any) { payload(m)["waitUntil"] = "2026-11-29T10:16:00Z" }},
		{"wait over an hour", "claim-created-waiting.json", "payload.waitUntil", func(m map[string]any) { payload(m)["waitUntil"] = "2026-11-29T11:16:00.001Z" }},
		{"release without releasedAt", "claim-released.json", "payload.releasedAt", func(m map[string]any) { delete(payload(m), "releasedAt") }},
		{"bad task status", "task-created.json", "payload.status", func(m map[string]any) { payload(m)["status"] = "wip" }},
		{"bad handoff status", "handoff-requested.json", "payload.status", func(m map[string]any) { payload(m)["status"] = "accepted" }},
		{"response without respondedAt", "handoff-responded.json", "payload.respondedAt", func(m map[string]any) { delete(payload(m), "respondedAt") }},
		{"bad validation kind", "validation-completed.json", "payload.kind", func(m map[string]any) { payload(m)["kind"] = "vibes" }},
		{"bad file status", "transaction-created.json", "payload.files[0].status", func(m map[string]any) {
			payload(m)["files"].([]any)[0].(map[string]any)["status"] = "moved"
		}},
		{"patch too large", "transaction-created.json", "payload.patch", func(m map[string]any) { payload(m)["patch"] = strings.Repeat("x", MaxPatchBytes+1) }},
		{"control char in id", "intent-published.json", "id", func(m map[string]any) { m["id"] = "int\x0001" }},
		{"tag characters in id", "intent-published.json", "id", func(m map[string]any) { m["id"] = "int_x\U000E0049\U000E0047"; payload(m)["id"] = m["id"] }},
		{"bidi override in actorId", "intent-published.json", "actorId", func(m map[string]any) { m["actorId"] = "ada\u202e@example.com" }},
		{"zero-width space in payload id", "claim-created.json", "payload.id", func(m map[string]any) { payload(m)["id"] = "clm\u200b1" }},
		{"payload wrong shape", "intent-published.json", "payload", func(m map[string]any) { m["payload"] = []int{1} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeEnvelope(mutate(t, tc.example, tc.f))
			assertField(t, err, tc.field)
		})
	}
}

func TestDecodeRejectsMalformed(t *testing.T) {
	for _, in := range []string{``, `{`, `[]`, `null`, `{"id":1}`, `{} {}`, `{"envelope":{}}x`} {
		if _, err := DecodeEnvelope([]byte(in)); err == nil {
			t.Errorf("DecodeEnvelope(%q) accepted", in)
		}
		if _, err := DecodeIngestRequest([]byte(in), KindClaim); err == nil {
			t.Errorf("DecodeIngestRequest(%q) accepted", in)
		}
	}
	_, err := DecodeIngestRequest([]byte(`{"envelope":null}`), KindClaim)
	assertField(t, err, "envelope")
	// A missing envelope is named as such, not as its first missing field.
	_, err = DecodeIngestRequest([]byte(`{}`), KindClaim)
	if err == nil || !strings.Contains(err.Error(), "envelope: required") {
		t.Fatalf("DecodeIngestRequest({}) = %v, want envelope: required", err)
	}
	_, err = DecodeIngestRequest([]byte(`{"envelope":{},"extra":1}`), KindClaim)
	if err == nil {
		t.Fatal("extra field accepted")
	}
	b := mutate(t, "claim-created.json", func(m map[string]any) { m["serverSequence"] = 7 })
	_, err = DecodeIngestRequest(append(append([]byte(`{"envelope":`), b...), '}'), KindClaim)
	assertField(t, err, "envelope.serverSequence")
	b = mutate(t, "claim-created.json", func(m map[string]any) { payload(m)["colour"] = 1 })
	_, err = DecodeIngestRequest(append(append([]byte(`{"envelope":`), b...), '}'), KindClaim)
	assertField(t, err, "envelope.payload.colour")
}

func TestTimesNormalizeToUTC(t *testing.T) {
	b := mutate(t, "intent-published.json", func(m map[string]any) {
		m["createdAt"] = "2026-11-29T11:15:00+01:00"
		payload(m)["createdAt"] = "2026-11-29T11:15:00.500+01:00"
	})
	e, err := DecodeEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := e.Canonical()
	if !bytes.Contains(c, []byte(`"createdAt":"2026-11-29T10:15:00Z"`)) || !bytes.Contains(c, []byte(`"createdAt":"2026-11-29T10:15:00.5Z"`)) {
		t.Fatalf("times not normalized to UTC: %s", c)
	}
}

func TestPresenceAndSubscribe(t *testing.T) {
	p, err := DecodePresenceUpdate([]byte(`{"replicaId":"r","actorId":"a","sessionId":"s","agent":{"provider":"codex"},"status":"idle"}`))
	if err != nil || p.Status != PresenceIdle {
		t.Fatalf("%v %+v", err, p)
	}
	_, err = DecodePresenceUpdate([]byte(`{"replicaId":"r","actorId":"a","status":"away"}`))
	assertField(t, err, "status")
	_, err = DecodePresenceUpdate([]byte(`{"replicaId":"r","actorId":"a","status":"online","x":1}`))
	assertField(t, err, "x")
	s, err := DecodeWSSubscribe([]byte(`{"type":"subscribe","workspaceId":"w","replicaId":"r","accessToken":"t"}`))
	if err != nil || s.AccessToken != "t" {
		t.Fatalf("%v %+v", err, s)
	}
	_, err = DecodeWSSubscribe([]byte(`{"type":"subscribe","workspaceId":"w","replicaId":"r"}`))
	assertField(t, err, "accessToken")
	_, err = DecodeWSSubscribe([]byte(`{"type":"hello","workspaceId":"w","replicaId":"r","accessToken":"t"}`))
	assertField(t, err, "type")
	var f FanOut
	err = json.Unmarshal([]byte(`{"type":"gossip","data":{}}`), &f)
	assertField(t, err, "type")
	err = json.Unmarshal([]byte(`{"type":"claim","data":{"eventId":"x","bogus":1}}`), &f)
	assertField(t, err, "data.bogus")
}

// BenchmarkDecodeIngestClaim: the service's decoding and validation of a
// claim's ingest request, without and with waitUntil (issue 24: the only
// work waiting adds to the service's ingest path).
func BenchmarkDecodeIngestClaim(b *testing.B) {
	for _, name := range []string{"claim-created.json", "claim-created-waiting.json"} {
		body := append(append([]byte(`{"envelope":`), readExample(b, name)...), '}')
		b.Run(strings.TrimSuffix(name, ".json"), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := DecodeIngestRequest(body, KindClaim); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
