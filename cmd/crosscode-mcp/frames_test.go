package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/jpeg"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crosscode/crosscode-mcp/internal/proctree"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// callImages runs a tool and returns its structured result and its
// images (checked: JPEG, at most 640 px wide, one per listed picture).
func (a *agent) callImages(tool string, args map[string]any) (map[string]any, []mcpgo.ImageContent) {
	a.t.Helper()
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := a.callChecked(ctx, req)
	if err != nil || res.IsError {
		a.t.Fatalf("%s: %v %+v\n%s", tool, err, res, a.stderr.String())
	}
	out := decodeResult(a.t, res)
	var imgs []mcpgo.ImageContent
	for _, c := range res.Content[1:] {
		img, ok := c.(mcpgo.ImageContent)
		if !ok {
			a.t.Fatalf("%s: content after the text is %T, want images", tool, c)
		}
		b, err := base64.StdEncoding.DecodeString(img.Data)
		if err != nil || img.MIMEType != "image/jpeg" {
			a.t.Fatalf("%s: image %s: %v", tool, img.MIMEType, err)
		}
		cfg, err := jpeg.DecodeConfig(bytes.NewReader(b))
		if err != nil || cfg.Width > 640 {
			a.t.Fatalf("%s: image %dx%d: %v", tool, cfg.Width, cfg.Height, err)
		}
		imgs = append(imgs, img)
	}
	if n := len(list(out, "pictures")); n != len(imgs) {
		a.t.Fatalf("%s: %d pictures listed, %d images attached", tool, n, len(imgs))
	}
	return out, imgs
}

// TestCaptureFrames: the agent sees what it plays, over stdio with the
// demo game: a contact sheet on run_scenario, keyframes at events from
// get_capture within its budget, a video, and a replay's pictures
// compared with its recording's (the same at another timeScale; different
// when the game draws otherwise while its events stay the same).
func TestCaptureFrames(t *testing.T) {
	repo := gitRepo(t)
	a := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo,
		args: []string{"--actor", "ada@example.com", "--game-cmd", os.Args[0] + " demo-game"}})

	run, imgs := a.callImages("run_scenario", map[string]any{"scenario": "boss_intro", "parameters": map[string]any{"difficulty": 2}})
	pics := list(run, "pictures")
	if run["status"] != "completed" || len(imgs) != 1 || pics[0]["kind"] != "contact_sheet" || field(run, "frames", "stored").(float64) < 10 {
		t.Fatalf("run_scenario: %v", run)
	}
	if _, err := os.Stat(pics[0]["file"].(string)); err != nil {
		t.Fatalf("the contact sheet is not on disk: %v", err)
	}
	op := run["op"].(string)

	got, imgs := a.callImages("get_capture", map[string]any{"op": op, "limit": 1, "keyframesAtEvents": []string{"BOSS_PHASE"}, "keyframes": 2})
	pics = list(got, "pictures")
	phases := 0
	for _, p := range pics {
		if p["kind"] != "keyframe" || p["file"] == "" || p["event"] == "" {
			t.Fatalf("keyframe %v", p)
		}
		if strings.Contains(p["why"].(string), "BOSS_PHASE") {
			phases++
		}
	}
	if phases != 3 || len(imgs) < 4 || len(imgs) > 5 {
		t.Fatalf("keyframes at the three BOSS_PHASE events and 2 evenly spaced: %v", got["pictures"])
	}
	// The budget: what does not fit is said, not sent.
	tight, imgs := a.callImages("get_capture", map[string]any{"op": op, "limit": 1, "keyframes": 3, "contactSheet": true, "imageBudgetBytes": 1})
	if len(imgs) != 0 || len(tight["picturesLeftOut"].([]any)) != 4 {
		t.Fatalf("over budget: %v", tight["picturesLeftOut"])
	}

	// A recording with frames, and its replay at half speed: the same
	// events and the same pictures at the same simulation times.
	rec := a.call("start_recording", nil)
	a.recorded(rec["op"].(string), 20, 3)
	stopped, imgs := a.callImages("stop_recording", map[string]any{"op": rec["op"]})
	if stopped["status"] != "completed" || len(imgs) != 1 {
		t.Fatalf("stop_recording: %v", stopped)
	}
	slow, imgs := a.callImages("replay", map[string]any{"op": rec["op"], "presentation": map[string]any{"timeScale": 0.5}})
	if field(slow, "divergence", "identical") != true || field(slow, "visualDivergence", "identical") != true || field(slow, "visualDivergence", "compared").(float64) < 2 || len(imgs) != 1 {
		t.Fatalf("replay at 0.5: %v %v", slow["divergence"], slow["visualDivergence"])
	}

	// The video, for a human.
	ffprobe := sysdeps.Need(t, "ffprobe")
	v := a.call("get_capture", map[string]any{"op": op, "limit": 1, "video": true})
	mp4, _ := field(v, "video", "mp4").(string)
	out, err := exec.Command(ffprobe, "-v", "error", "-show_entries", "format=duration", "-of", "json", mp4).Output()
	var probe struct{ Format struct{ Duration string } }
	if err != nil || json.Unmarshal(out, &probe) != nil {
		t.Fatalf("ffprobe %s: %v %s (%v)", mp4, err, out, v["videoNote"])
	}
	if d, _ := strconv.ParseFloat(probe.Format.Duration, 64); d*1000 < run["lastT"].(float64) {
		t.Fatalf("video of %gs for a run of %gms", d, run["lastT"])
	}
	if _, err := os.Stat(field(v, "video", "vtt").(string)); err != nil {
		t.Fatal(err)
	}
	a.c.Close()

	// The same recording replayed by a build that draws otherwise: the
	// events still match, the pictures do not.
	b := startAgent(t, "bo", agentOpts{clientName: "cursor", dir: repo,
		args: []string{"--actor", "bo@example.com", "--game-cmd", os.Args[0] + " demo-game -palette night"}})
	night, imgs := b.callImages("replay", map[string]any{"op": rec["op"]})
	vd, _ := night["visualDivergence"].(map[string]any)
	if field(night, "divergence", "identical") != true || vd["identical"] != false || vd["image"] == nil || len(imgs) != 2 {
		t.Fatalf("another palette: events %v, pictures %v", night["divergence"], vd)
	}
	if kinds := list(night, "pictures"); kinds[0]["kind"] != "divergence" {
		t.Fatalf("the side-by-side first: %v", kinds)
	}
}

// A server killed mid-recording (kill -9) loses nothing it stored: the
// next server in the repository ends the abandoned operation as failed and
// still shows its events and frames.
func TestCaptureFramesSurviveKill9(t *testing.T) {
	repo := gitRepo(t)
	args := []string{"--actor", "ada@example.com", "--game-cmd", os.Args[0] + " demo-game"}
	a := startAgent(t, "ada", agentOpts{clientName: "claude-code", dir: repo, args: args})
	rec := a.call("start_recording", map[string]any{"frames": 10})
	op := rec["op"].(string)
	var stored float64
	waitFor(t, "frames stored during the recording", func() bool {
		got := a.call("get_capture", map[string]any{"op": op, "limit": 1})
		stored, _ = field(got, "frames", "stored").(float64)
		return stored >= 3
	})
	game, _ := field(a.call("capture_status", nil), "game", "pid").(float64)
	if game == 0 {
		t.Fatal("capture_status names no game pid")
	}
	a.kill9()
	// The game does not outlive its server, even one killed with no chance to stop it.
	waitFor(t, "the game to die with its server", func() bool { return !proctree.Alive(int(game)) })

	b := startAgent(t, "ada2", agentOpts{clientName: "claude-code", dir: repo, args: args})
	got, imgs := b.callImages("get_capture", map[string]any{"op": op, "limit": 1, "keyframes": 2})
	if got["status"] != "failed" || got["code"] != "ADAPTER_DISCONNECTED" || !strings.Contains(got["message"].(string), "killed") {
		t.Fatalf("after kill -9: %v %v %v", got["status"], got["code"], got["message"])
	}
	if field(got, "frames", "stored").(float64) < stored || got["events"].(float64) == 0 || len(imgs) != 2 {
		t.Fatalf("frames %v, events %v, %d pictures; want what was stored before the kill", got["frames"], got["events"], len(imgs))
	}
}
