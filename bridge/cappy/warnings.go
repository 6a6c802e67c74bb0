package cappy

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Warnings: what the game's adapter (protocol.MsgWarnings, and the
// warnings of its summary) and the controller know that the agent should,
// kept with each operation they concern, so that they reach the answer of
// the tool call, not only the game's log.

// MaxOpWarnings is the most warnings an operation keeps.
const MaxOpWarnings = protocol.MaxWarnings

// Warnings returns the connected adapter's warnings as it last sent them
// (nil when none is connected, or it has none).
func (c *Controller) Warnings() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil
	}
	return slices.Clone(c.conn.warnings)
}

// adapterWarnings takes the adapter's list: it stands for the adapter, and
// each warning joins the operation running.
func (c *Controller) adapterWarnings(a *adapterConn, w *protocol.Warnings) {
	c.mu.Lock()
	a.warnings = slices.Clone(w.Warnings)
	op := c.op
	c.mu.Unlock()
	if op != nil {
		c.warn(op, w.Warnings...)
	}
}

// warn adds warnings to an operation (each once, at most MaxOpWarnings)
// and stores its list when it grew.
func (c *Controller) warn(o *Operation, ws ...string) {
	o.mu.Lock()
	grew := o.addWarnings(ws)
	o.mu.Unlock()
	if !grew {
		return
	}
	// In order: the list written last is the longest.
	o.warnMu.Lock()
	defer o.warnMu.Unlock()
	o.mu.Lock()
	list := slices.Clone(o.warnings)
	o.mu.Unlock()
	if err := c.st.UpdateCapture(context.Background(), o.ID, store.CaptureUpdate{Warnings: list}); err != nil {
		c.log.Error("store warnings", "op", o.ID, "err", err)
	}
}

// addWarnings adds the new ones among ws; o.mu is held.
func (o *Operation) addWarnings(ws []string) bool {
	grew := false
	for _, w := range ws {
		if w == "" || len(o.warnings) >= MaxOpWarnings || slices.Contains(o.warnings, w) {
			continue
		}
		o.warnings = append(o.warnings, w)
		grew = true
	}
	return grew
}

// summaryWarnings are the warnings an adapter's summary holds: its
// "warnings", the "eventProblems" of addons before MsgWarnings, and the
// script errors of a run that went on despite them.
func summaryWarnings(summary json.RawMessage) []string {
	var s struct {
		Warnings      []any `json:"warnings"`
		EventProblems []any `json:"eventProblems"`
		ScriptErrors  []any `json:"scriptErrors"`
	}
	if json.Unmarshal(summary, &s) != nil {
		return nil
	}
	var out []string
	add := func(prefix string, items []any) {
		for _, it := range items {
			if text, ok := it.(string); ok && text != "" {
				out = append(out, prefix+text)
			}
		}
	}
	add("", s.Warnings)
	add("", s.EventProblems)
	add("a script error while it ran: ", s.ScriptErrors)
	return out
}

// endT is where the operation ended on its presented clock: the latest of
// its events, frames and steps, and the simulated time its adapter's
// summary reports (simMs, at the operation's timeScale). o.mu is held.
func (o *Operation) endT(summary json.RawMessage) float64 {
	end := max(o.lastT, o.play.lastT)
	if o.frames.taken {
		end = max(end, o.frames.lastT)
	}
	var s struct {
		SimMs *float64 `json:"simMs"`
	}
	if len(summary) > 0 && json.Unmarshal(summary, &s) == nil && s.SimMs != nil && *s.SimMs >= 0 {
		end = max(end, *s.SimMs/o.Presentation.TimeScale())
	}
	return end
}
