package cappy

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"reflect"

	"github.com/crosscode/crosscode-mcp/store"
)

// Divergence is the first difference between a replay's event timeline and
// its recording's.
type Divergence struct {
	Identical bool  `json:"identical"`
	Compared  int64 `json:"compared" jsonschema_description:"Events compared before the first difference (or all)."`
	// The first difference: where, what, and the two events.
	Index    int64               `json:"index,omitempty"`
	Field    string              `json:"field,omitempty" jsonschema:"enum=event,enum=payload,enum=t,enum=missing,enum=extra"`
	Expected *store.CaptureEvent `json:"expected,omitempty"`
	Actual   *store.CaptureEvent `json:"actual,omitempty"`
	DeltaMs  float64             `json:"deltaMs,omitempty" jsonschema_description:"For t: the difference in the recording's clock."`
}

// Compare walks the recording's and the replay's events side by side
// (paged, so memory stays flat) and reports the first divergence: another
// event name, another payload, or a t off by more than toleranceMs in the
// recording's clock. The replay's t is presented time at timeScale, so it
// is compared as t*timeScale.
func Compare(ctx context.Context, st *store.Store, recording, replay string, timeScale, toleranceMs float64) (*Divergence, error) {
	if timeScale <= 0 {
		timeScale = 1
	}
	const page = 1000
	var afterA, afterB int64
	var a, b []store.CaptureEvent
	var idx int64
	for {
		if len(a) == 0 {
			var err error
			if a, err = st.Events(ctx, store.EventQuery{Op: recording, AfterSeq: afterA, Limit: page}); err != nil {
				return nil, err
			}
			if len(a) > 0 {
				afterA = a[len(a)-1].Seq
			}
		}
		if len(b) == 0 {
			var err error
			if b, err = st.Events(ctx, store.EventQuery{Op: replay, AfterSeq: afterB, Limit: page}); err != nil {
				return nil, err
			}
			if len(b) > 0 {
				afterB = b[len(b)-1].Seq
			}
		}
		switch {
		case len(a) == 0 && len(b) == 0:
			return &Divergence{Identical: true, Compared: idx}, nil
		case len(a) == 0:
			e := b[0]
			return &Divergence{Compared: idx, Index: idx, Field: "extra", Actual: &e}, nil
		case len(b) == 0:
			e := a[0]
			return &Divergence{Compared: idx, Index: idx, Field: "missing", Expected: &e}, nil
		}
		// Compared in place; the two events are copied out only at a difference.
		x, y := &a[0], &b[0]
		field, delta := "", y.T*timeScale-x.T
		switch {
		case x.Event != y.Event:
			field = "event"
		case !samePayload(x.Payload, y.Payload):
			field = "payload"
		case math.Abs(delta) > toleranceMs:
			field = "t"
		}
		if field != "" {
			ex, ac := *x, *y
			d := &Divergence{Compared: idx, Index: idx, Field: field, Expected: &ex, Actual: &ac}
			if field == "t" {
				d.DeltaMs = delta
			}
			return d, nil
		}
		a, b = a[1:], b[1:]
		idx++
	}
}

// samePayload compares two JSON payloads by value.
func samePayload(x, y json.RawMessage) bool {
	if bytes.Equal(x, y) {
		return true
	}
	var vx, vy any
	if json.Unmarshal(x, &vx) != nil || json.Unmarshal(y, &vy) != nil {
		return false
	}
	return reflect.DeepEqual(vx, vy)
}
