package protocol

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func addExampleSeeds(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "examples", "*.json"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"envelope":null}`))
	f.Add([]byte(`{"type":"claim","data":{}}`))
}

// FuzzDecodeEnvelope: decoding never panics, and whatever decodes has a
// canonical form that decodes to the same canonical form.
func FuzzDecodeEnvelope(f *testing.F) {
	addExampleSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := DecodeEnvelope(data)
		if err != nil {
			return
		}
		c1, err := e.Canonical()
		if err != nil {
			t.Fatalf("decoded envelope does not encode: %v", err)
		}
		e2, err := DecodeEnvelope(c1)
		if err != nil {
			t.Fatalf("canonical form does not decode: %v\n%s", err, c1)
		}
		c2, _ := e2.Canonical()
		if !bytes.Equal(c1, c2) {
			t.Fatalf("canonical form unstable:\n%s\n%s", c1, c2)
		}
	})
}

// FuzzDecodeIngestRequest: never panics; an accepted request has the
// endpoint's kind and no service-assigned fields.
func FuzzDecodeIngestRequest(f *testing.F) {
	addExampleSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, k := range Kinds {
			e, err := DecodeIngestRequest(data, k)
			if err != nil {
				continue
			}
			if e.Type.Kind() != k || e.ServerSequence != 0 || e.IngestedAt != nil {
				t.Fatalf("accepted %q on %s with seq %d", e.Type, k, e.ServerSequence)
			}
		}
	})
}

// FuzzDecodeWire covers the other decoders a peer can reach.
func FuzzDecodeWire(f *testing.F) {
	addExampleSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var fo FanOut
		if json.Unmarshal(data, &fo) == nil {
			if _, err := json.Marshal(fo); err != nil {
				t.Fatalf("decoded frame does not encode: %v", err)
			}
		}
		_, _ = DecodePageResponse(data)
		_, _ = DecodePresenceUpdate(data)
		_, _ = DecodeWSSubscribe(data)
	})
}
