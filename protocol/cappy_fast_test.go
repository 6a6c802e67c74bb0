package protocol

import "testing"

// The fast event path takes only what the strict decoder keeps the same:
// white space around the payload object (which the strict decoder drops
// and json.Valid allows) sends the frame to the strict path.
func TestEventFastPathRefusesPaddedPayload(t *testing.T) {
	for _, in := range []string{
		`{"type":"event","op":"op_1","t":1,"event":"X","payload":{"a":1} }`,
		`{"type":"event","op":"op_1","t":1,"event":"X","payload":{"a":1}` + "\n}",
		`{"type":"event","op":"op_1","t":1,"event":"X","payload": {"a":1}}`,
	} {
		if e, ok := parseEventFast([]byte(in)); ok {
			t.Errorf("parseEventFast(%s) took it, payload %q", in, e.Payload)
		}
	}
	if _, ok := parseEventFast([]byte(`{"type":"event","op":"op_1","t":1,"event":"X","payload":{"a":1}}`)); !ok {
		t.Fatal("the fast path refuses a plain frame")
	}
}
