package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/crosscode/crosscode-mcp/hub"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Captures is what the captures view reads: this machine's capture store
// (a *store.Store opened on <data>/capture/captures.db).
type Captures interface {
	Captures(ctx context.Context, kind string, before time.Time, limit int) ([]*store.Capture, error)
	Capture(ctx context.Context, op string) (*store.Capture, error)
	Events(ctx context.Context, q store.EventQuery) ([]store.CaptureEvent, error)
	Frames(ctx context.Context, q store.FrameQuery) ([]store.CaptureFrame, error)
}

// Capture list and timeline limits.
const (
	defaultCaptureList = 50
	maxCaptureList     = 500
	defaultEventPage   = 500
	maxEventPage       = 2000
	// maxFrameList is how many frames GET /v1/captures/{op} lists.
	maxFrameList = 600
)

// captureDetail answers GET /v1/captures/{op}: the operation, its first
// frames (spec section 7) with where to fetch each, and its video (made
// from the frames on first request) when it has frames.
type captureDetail struct {
	Capture     *store.Capture `json:"capture"`
	Frames      []frameRef     `json:"frames"`
	FramesTotal int64          `json:"framesTotal"`
	Video       string         `json:"video,omitempty"` // a URL on this server
}

// frameRef is one stored frame: when it was shown and where to fetch it.
type frameRef struct {
	Seq    int64   `json:"seq"`
	T      float64 `json:"t"`
	Mime   string  `json:"mime"`
	Width  int     `json:"width"`
	Height int     `json:"height"`
	URL    string  `json:"url"`
}

func (d *Dashboard) captureRoutes(mux *http.ServeMux, authed func(hub.AuthedFunc) http.Handler) {
	mux.Handle("GET /v1/captures", authed(d.listCaptures))
	mux.Handle("GET /v1/captures/{op}", authed(d.getCapture))
	mux.Handle("GET /v1/captures/{op}/events", authed(d.captureEvents))
	mux.Handle("GET /v1/captures/{op}/frames/{seq}", authed(d.captureFrame))
	mux.Handle("GET /v1/captures/{op}/video.mp4", authed(d.captureVideo))
}

// listCaptures serves GET /v1/captures?[kind=K][&before=RFC3339][&limit=n],
// newest first; nextBefore pages on.
func (d *Dashboard) listCaptures(w http.ResponseWriter, r *http.Request, _ string) {
	q := r.URL.Query()
	limit, ok := intQuery(w, q.Get("limit"), defaultCaptureList, maxCaptureList, "limit")
	if !ok {
		return
	}
	var before time.Time
	if v := q.Get("before"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			writeError(w, http.StatusBadRequest, protocol.CodeSchemaInvalid, "before: must be an RFC 3339 time")
			return
		}
		before = t
	}
	list, err := d.opts.Captures.Captures(r.Context(), q.Get("kind"), before, int(limit)+1)
	if err != nil {
		d.internal(w, "captures", err)
		return
	}
	more := len(list) > int(limit)
	if more {
		list = list[:limit]
	}
	if list == nil {
		list = []*store.Capture{}
	}
	ans := struct {
		Items      []*store.Capture `json:"items"`
		HasMore    bool             `json:"hasMore"`
		NextBefore *time.Time       `json:"nextBefore,omitempty"`
	}{Items: list, HasMore: more}
	if more {
		ans.NextBefore = &list[len(list)-1].CreatedAt
	}
	writeJSON(w, http.StatusOK, ans)
}

func (d *Dashboard) getCapture(w http.ResponseWriter, r *http.Request, _ string) {
	c, err := d.opts.Captures.Capture(r.Context(), r.PathValue("op"))
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, protocol.CodeNotFound, fmt.Sprintf("no capture %q on this machine", r.PathValue("op")))
		return
	}
	if err != nil {
		d.internal(w, "capture", err)
		return
	}
	ans := captureDetail{Capture: c, Frames: []frameRef{}, FramesTotal: c.Frames}
	if c.Frames > 0 && d.opts.FrameDir != "" {
		frames, err := d.opts.Captures.Frames(r.Context(), store.FrameQuery{Op: c.Op, Limit: maxFrameList})
		if err != nil {
			d.internal(w, "capture frames", err)
			return
		}
		base := "/v1/captures/" + url.PathEscape(c.Op)
		for _, f := range frames {
			ans.Frames = append(ans.Frames, frameRef{Seq: f.Seq, T: f.T, Mime: f.Mime, Width: f.Width, Height: f.Height, URL: base + "/frames/" + strconv.FormatInt(f.Seq, 10)})
		}
		if d.opts.VideoDir != "" {
			ans.Video = base + "/video.mp4"
		}
	}
	writeJSON(w, http.StatusOK, ans)
}

// captureEvents serves GET /v1/captures/{op}/events?[afterSeq=n][&limit=k]:
// the operation's event timeline in receipt order.
func (d *Dashboard) captureEvents(w http.ResponseWriter, r *http.Request, _ string) {
	q := r.URL.Query()
	limit, ok := intQuery(w, q.Get("limit"), defaultEventPage, maxEventPage, "limit")
	if !ok {
		return
	}
	after, ok := intQuery(w, q.Get("afterSeq"), 0, 1<<62, "afterSeq")
	if !ok {
		return
	}
	evs, err := d.opts.Captures.Events(r.Context(), store.EventQuery{Op: r.PathValue("op"), AfterSeq: after, Limit: int(limit) + 1})
	if err != nil {
		d.internal(w, "capture events", err)
		return
	}
	more := len(evs) > int(limit)
	if more {
		evs = evs[:limit]
	}
	next := after
	if len(evs) > 0 {
		next = evs[len(evs)-1].Seq
	}
	if evs == nil {
		evs = []store.CaptureEvent{}
	}
	writeJSON(w, http.StatusOK, struct {
		Items      []store.CaptureEvent `json:"items"`
		NextCursor int64                `json:"nextCursor"`
		HasMore    bool                 `json:"hasMore"`
	}{evs, next, more})
}

// intQuery parses an integer query parameter from 0 (1 for limits) to
// max, answering 400 when it is not one.
func intQuery(w http.ResponseWriter, v string, def, max int64, name string) (int64, bool) {
	if v == "" {
		return def, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	low := int64(0)
	if name == "limit" {
		low = 1
	}
	if err != nil || n < low || n > max {
		writeError(w, http.StatusBadRequest, protocol.CodeSchemaInvalid, fmt.Sprintf("%s: must be an integer from %d to %d", name, low, max))
		return 0, false
	}
	return n, true
}
