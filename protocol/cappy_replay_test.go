package protocol

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestInlineReplayRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 1000, MaxInlineReplayBytes - 1, MaxInlineReplayBytes} {
		data := bytes.Repeat([]byte{0xa5, 0x17, 'x'}, n/3+1)[:n]
		r := NewInlineReplay(data, "game/v1")
		if r.Kind != "inline" || r.Encoding != "base64" || r.Format != "game/v1" || r.SHA256 != strings.ToLower(r.SHA256) {
			t.Fatalf("%d bytes: %+v", n, r)
		}
		if n == 0 {
			continue // Validate wants data; an empty replay is no replay
		}
		got, err := r.DecodeInline()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%d bytes: DecodeInline = %d bytes, %v", n, len(got), err)
		}
		up := *r
		up.SHA256 = strings.ToUpper(r.SHA256) // Validate takes either case; so does the check
		if _, err := up.DecodeInline(); err != nil {
			t.Fatalf("%d bytes, upper-case sha256: %v", n, err)
		}
	}
}

func TestDecodeInlineRefusals(t *testing.T) {
	good := NewInlineReplay([]byte("replay"), "")
	over := NewInlineReplay(make([]byte, MaxInlineReplayBytes+1), "")
	tampered := *good
	tampered.SHA256 = strings.Repeat("0", 64)
	notB64 := *good
	notB64.Data = "!!!!"
	unpadded := NewInlineReplay(make([]byte, MaxInlineReplayBytes), "")
	unpadded.Data = strings.TrimRight(unpadded.Data, "=") + "AA" // decodes to more than the limit within its length bound
	for name, r := range map[string]*ReplayPayload{
		"nil":         nil,
		"over 1 MiB":  over,
		"tampered":    &tampered,
		"not base64":  &notB64,
		"a file":      {Kind: "file", Path: "/tmp/r", Bytes: 1, SHA256: good.SHA256},
		"no encoding": {Kind: "inline", Data: good.Data, SHA256: good.SHA256},
		"unpadded":    unpadded,
	} {
		if _, err := r.DecodeInline(); err == nil {
			t.Errorf("%s: accepted", name)
		} else if fe := (*FieldError)(nil); !errors.As(err, &fe) {
			t.Errorf("%s: %T %v, want a *FieldError", name, err, err)
		}
	}
	if _, err := over.DecodeInline(); err == nil || !strings.Contains(err.Error(), "1048576") {
		t.Errorf("over 1 MiB: %v, want the limit named", err)
	}
}

func TestPresentationCheck(t *testing.T) {
	all := func(string) bool { return true }
	none := func(string) bool { return false }
	for _, tc := range []struct {
		p    Presentation
		has  func(string) bool
		code string // "" accepted
	}{
		{nil, none, ""},
		{Presentation{"fov": 90.0, "other": "x"}, none, ""}, // the adapter's own keys
		{Presentation{"timeScale": 0.1, "camera": "wide"}, all, ""},
		{Presentation{"timeScale": 4.0}, all, ""},
		{Presentation{"timeScale": 0.5}, nil, ""}, // values only
		{Presentation{"timeScale": 0.5}, none, CappyCapabilityMissing},
		{Presentation{"camera": "wide"}, none, CappyCapabilityMissing},
		{Presentation{"camera": "wide"}, func(c string) bool { return c == CapTimeScale }, CappyCapabilityMissing},
		{Presentation{"timeScale": 0.09}, all, CappyPresentationRejected},
		{Presentation{"timeScale": 4.01}, all, CappyPresentationRejected},
		{Presentation{"timeScale": math.NaN()}, all, CappyPresentationRejected},
		{Presentation{"timeScale": "fast"}, all, CappyPresentationRejected},
		{Presentation{"timeScale": 2}, all, CappyPresentationRejected}, // a Go int is not a JSON number
		{Presentation{"camera": ""}, all, CappyPresentationRejected},
		{Presentation{"camera": ""}, none, CappyPresentationRejected}, // the value first
		{Presentation{"camera": 3.0}, all, CappyPresentationRejected},
		{Presentation{"timeScale": 9.0}, nil, CappyPresentationRejected},
	} {
		err := tc.p.Check(tc.has)
		var f *CappyFailure
		switch {
		case tc.code == "" && err != nil:
			t.Errorf("%v: %v", tc.p, err)
		case tc.code != "" && (!errors.As(err, &f) || f.Code != tc.code || f.Message == ""):
			t.Errorf("%v: %v, want %s", tc.p, err, tc.code)
		}
	}
	err := Presentation{"camera": "wide"}.Check(none)
	if !strings.Contains(err.Error(), CapAlternateCameras) {
		t.Errorf("capability not named: %v", err)
	}
}

func TestCheckEventFields(t *testing.T) {
	d := func(v float64) *float64 { return &v }
	if err := CheckEventFields(0, "E", nil); err != nil {
		t.Fatal(err)
	}
	if err := CheckEventFields(1e12, strings.Repeat("é", MaxEventNameBytes/2), d(0)); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		t   float64
		ev  string
		dur *float64
	}{
		"negative t":        {-1, "E", nil},
		"NaN t":             {math.NaN(), "E", nil},
		"infinite t":        {math.Inf(1), "E", nil},
		"no name":           {0, "", nil},
		"long name":         {0, strings.Repeat("x", MaxEventNameBytes+1), nil},
		"control":           {0, "A\x00", nil},
		"bad UTF-8":         {0, "\xff", nil},
		"negative duration": {0, "E", d(-1)},
		"NaN duration":      {0, "E", d(math.NaN())},
		"infinite duration": {0, "E", d(math.Inf(1))},
	} {
		if err := CheckEventFields(tc.t, tc.ev, tc.dur); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// An event decodes the same through the fast path and any other field order.
func TestDecodeEventOnePath(t *testing.T) {
	for _, in := range []string{
		`{"type":"event","op":"op_1","t":5,"event":"E","payload":{"a":1}}`,
		`{"op":"op_1","type":"event","event":"E","t":5,"payload":{"a":1}}`,
		`{"type":"event", "op":"op_1","t":5,"event":"E","payload":{"a":1}}`,
	} {
		m, err := DecodeAdapterMessage([]byte(in))
		if err != nil || m.Type != "event" || m.Event.Op != "op_1" || m.Event.T != 5 || m.Event.Event != "E" || string(m.Event.Payload) != `{"a":1}` {
			t.Fatalf("%s: %+v %v", in, m, err)
		}
	}
	for _, in := range []string{
		`{"op":"op_1","type":"event","event":"","t":5}`,
		`{"type":"event","op":"op_1","t":-5,"event":"E"}`,
		`{"op":"op_1","type":"event","event":"E","t":5,"x":1}`,
	} {
		if _, err := DecodeAdapterMessage([]byte(in)); err == nil {
			t.Errorf("%s: accepted", in)
		}
	}
}
