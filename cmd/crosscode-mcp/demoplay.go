package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// The demo's last part: an agent plays the demo game itself (spec section
// 11). Its policy is scripted: it reads the fight with inspect_game, walks
// the knight to the Golem King, strikes when in reach, shields and rolls
// away from the meteor, and looks at every step's picture. Then the play
// is replayed at half speed and checked, events and pictures.

// demoPlaySteps is how many steps the scripted agent plays.
const demoPlaySteps = 12

// playGame is step 7 of the demo.
func (d *demo) playGame(ctx context.Context, a *demoAgent) error {
	d.step("7. bo plays the game itself: it runs in steps, paused while bo thinks, and the play is a replay.")
	rec, imgs, err := a.callImages(ctx, "start_recording", map[string]any{"control": "agent"})
	if err != nil {
		return err
	}
	op := str(rec, "op")
	var names []string
	for _, ac := range list(rec, "actions") {
		names = append(names, str(ac, "name")+" ("+str(ac, "kind")+")")
	}
	d.say("start_recording control=agent -> %s, paused at t=%v; the game's actions: %s; %d picture", op, field(rec, "t"), strings.Join(names, ", "), len(imgs))
	if err := expect(str(rec, "status") == "running" && len(names) > 0 && len(imgs) == 1, "start_recording control=agent: %v", rec); err != nil {
		return err
	}
	hits := 0
	// The inputs as last sent, as JSON: buttons start released.
	held := map[string]string{"dodge": `{"name":"dodge","pressed":false}`, "attack": `{"name":"attack","pressed":false}`}
	for i := range demoPlaySteps {
		hero, err := a.call(ctx, "inspect_game", map[string]any{"query": "hero"})
		if err != nil {
			return err
		}
		boss, err := a.call(ctx, "inspect_game", map[string]any{"query": "boss"})
		if err != nil {
			return err
		}
		proj, err := a.call(ctx, "inspect_game", map[string]any{"query": "projectiles"})
		if err != nil {
			return err
		}
		want, ms, why := demoPolicy(hero["value"], boss["value"], proj["value"])
		// Inputs are held until changed: send only what changes.
		actions := []any{}
		for _, ac := range want {
			b, _ := json.Marshal(ac)
			name := ac.(map[string]any)["name"].(string)
			if held[name] != string(b) {
				held[name] = string(b)
				actions = append(actions, ac)
			}
		}
		out, imgs, err := a.callImages(ctx, "step_game", map[string]any{"actions": actions, "ms": ms})
		if err != nil {
			return err
		}
		var evs []string
		for _, e := range list(out, "events") {
			name := str(e, "event")
			if name == "HIT" && str(e, "payload", "actor") == "hero" {
				hits++
			}
			evs = append(evs, name)
		}
		if n, _ := out["eventsOmitted"].(float64); n > 0 {
			evs = append(evs, fmt.Sprintf("+%g more", n))
		}
		if len(evs) == 0 {
			evs = []string{"(none)"}
		}
		act, _ := json.Marshal(actions)
		d.say("step_game %s ms=%v (%s) -> t=%v, %d picture, events: %s", act, ms, why, field(out, "t"), len(imgs), strings.Join(evs, " "))
		if err := expect(len(imgs) == 1, "step %d has no picture: %v", i, out["pictureNote"]); err != nil {
			return err
		}
		if i == demoPlaySteps-1 {
			if err := d.savePicture(imgs[0], "agent-step.png"); err != nil {
				return err
			}
		}
	}
	boss, err := a.call(ctx, "inspect_game", map[string]any{"query": "boss"})
	if err != nil {
		return err
	}
	v, _ := json.Marshal(boss["value"])
	d.say("inspect_game boss -> %s", v)
	if err := expect(hits > 0 && field(boss, "value", "present") == true, "the agent never hit the boss (%d hits): %s", hits, v); err != nil {
		return err
	}
	stop, err := a.call(ctx, "stop_recording", map[string]any{"op": op})
	if err != nil {
		return err
	}
	d.say("stop_recording -> %s, %v events, replay sha256 %.12s… stored", str(stop, "status"), field(stop, "events"), str(stop, "replay", "sha256"))
	rp, err := a.call(ctx, "replay", map[string]any{"op": op, "presentation": map[string]any{"timeScale": 0.5}})
	if err != nil {
		return err
	}
	d.say("replay of the agent's play at timeScale 0.5 -> %s; events identical: %v (%v compared); pictures identical: %v (%v compared)", str(rp, "status"),
		field(rp, "divergence", "identical"), field(rp, "divergence", "compared"), field(rp, "visualDivergence", "identical"), field(rp, "visualDivergence", "compared"))
	if err := expect(field(rp, "divergence", "identical") == true, "the agent's replay diverged: %v", field(rp, "divergence")); err != nil {
		return err
	}
	return expect(field(rp, "visualDivergence", "identical") == true, "the agent's replay looks different: %v", field(rp, "visualDivergence"))
}

// demoPolicy is the scripted agent: from the hero, the boss and the
// projectiles (inspect_game values), the next step's actions, its ms, and
// why.
func demoPolicy(hero, boss, proj any) ([]any, float64, string) {
	num := func(v any, k string) float64 {
		m, _ := v.(map[string]any)
		f, _ := m[k].(float64)
		return f
	}
	walk := func(x, y float64) map[string]any { return map[string]any{"name": "move", "x": x, "y": y} }
	press := func(name string, on bool) map[string]any { return map[string]any{"name": name, "pressed": on} }
	if ps, _ := proj.([]any); len(ps) > 0 {
		for _, p := range ps {
			if m, _ := p.(map[string]any); m["to"] == "hero" && num(m, "landsInMs") <= 700 && num(hero, "dodgeReadyInMs") == 0 {
				return []any{press("dodge", true), press("attack", false), walk(0, -1)}, 300, "a meteor lands soon: roll"
			}
		}
	}
	bm, _ := boss.(map[string]any)
	tx, ty := 860.0, 450.0 // where the boss will stand
	if bm["present"] == true {
		tx, ty = num(boss, "x"), num(boss, "y")
		if bm["inReach"] == true {
			return []any{press("dodge", false), walk(0, 0), press("attack", true)}, 500, "in reach: strike"
		}
	}
	dx, dy := tx-num(hero, "x"), ty-num(hero, "y")
	n := math.Max(math.Abs(dx), math.Abs(dy))
	if bm["present"] != true && n < 150 {
		return []any{press("dodge", false), walk(0, 0)}, 500, "wait for the boss"
	}
	x, y := math.Round(dx/n*100)/100, math.Round(dy/n*100)/100
	return []any{press("dodge", false), walk(x, y), press("attack", true)}, 500, "walk to the boss"
}

// callImages runs a tool and returns its result and its images.
func (a *demoAgent) callImages(ctx context.Context, tool string, args map[string]any) (map[string]any, []mcpgo.ImageContent, error) {
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := a.c.CallTool(ctx, req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %s: %w", a.name, tool, err)
	}
	if checkResult != nil {
		if err := checkResult(ctx, a.c, tool, res); err != nil {
			return nil, nil, err
		}
	}
	var text string
	var imgs []mcpgo.ImageContent
	for _, c := range res.Content {
		switch c := c.(type) {
		case mcpgo.TextContent:
			text = c.Text
		case mcpgo.ImageContent:
			imgs = append(imgs, c)
		}
	}
	if res.IsError {
		return nil, nil, fmt.Errorf("%s: %s: %s", a.name, tool, text)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		return nil, nil, fmt.Errorf("%s: %s: result is not JSON: %v", a.name, tool, err)
	}
	return out, imgs, nil
}

// savePicture writes an image the agent got as a PNG in the demo's
// media directory.
func (d *demo) savePicture(img mcpgo.ImageContent, name string) error {
	b, err := base64.StdEncoding.DecodeString(img.Data)
	if err != nil {
		return err
	}
	m, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("the step's picture: %w", err)
	}
	if err := os.MkdirAll(d.media, 0o755); err != nil {
		return err
	}
	var out bytes.Buffer
	if err := png.Encode(&out, m); err != nil {
		return err
	}
	path := filepath.Join(d.media, name)
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		return err
	}
	d.say("what bo saw after its last step: %s", path)
	return nil
}
