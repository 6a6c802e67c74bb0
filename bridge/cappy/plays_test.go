package cappy

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckPlayName(t *testing.T) {
	for _, ok := range []string{"boss-fight", "level_2.hard", "A", strings.Repeat("x", 64)} {
		if err := CheckPlayName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "../x", "a/b", `a\b`, ".hidden", "end.", strings.Repeat("x", 65), "sp ace", "é"} {
		if err := CheckPlayName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A play file is written a key a line and an event or picture a line, and
// reads back the same; its embedded replay is sent as compact JSON.
func TestPlayFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	seed := int64(7)
	p := &Play{Format: PlayFormatVersion, Game: "g", Adapter: "a", Seed: &seed, LengthMs: 1500,
		Replay:   PlayReplay{Format: "f/1", JSON: json.RawMessage(`{"steps":[{"ms":500,"keys":["<a&b>"]}],"seed":12345678901234567890}`)},
		Events:   []PlayEvent{{T: 0, Event: "START"}, {T: 1500, Event: "END", Payload: json.RawMessage(`{"score":3}`)}},
		Pictures: []PlayPicture{}}
	data, err := encodePlay(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte("\n    {\"t\":1500,\"event\":\"END\",\"payload\":{\"score\":3}}\n  ],")) || !bytes.Contains(data, []byte(`"pictures": []`)) {
		t.Fatalf("layout:\n%s", data)
	}
	os.WriteFile(PlayPath(dir, "x"), data, 0o644)
	lp, err := LoadPlay(dir, "x")
	if err != nil {
		t.Fatal(err)
	}
	if string(lp.Payload()) != `{"steps":[{"ms":500,"keys":["<a&b>"]}],"seed":12345678901234567890}` || len(lp.Events) != 2 || *lp.Seed != 7 {
		t.Fatalf("read back: %s %+v", lp.Payload(), lp.Play)
	}
	again, _ := encodePlay(lp.Play)
	if !bytes.Equal(again, data) {
		t.Fatalf("not stable:\n%s\n%s", again, data)
	}
}

func TestEventChanges(t *testing.T) {
	ev := func(t float64, name string) PlayEvent { return PlayEvent{T: t, Event: name} }
	old := []PlayEvent{ev(0, "START"), ev(100, "HIT"), ev(200, "HIT"), ev(900, "END")}
	cur := []PlayEvent{ev(0, "START"), ev(100, "HIT"), ev(400, "BOSS"), ev(1200, "END")}
	got := strings.Join(eventChanges(old, cur, 50), "\n")
	want := "added: BOSS at t=400ms\nremoved: HIT at t=200ms\nmoved: END from t=900ms to t=1200ms"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if c := eventChanges(old, old, 50); len(c) != 0 {
		t.Fatalf("no change: %v", c)
	}
}

// A save is refused before the recording stops, with the reason and the
// fix, for a game that cannot replay, a Godot game without --fixed-fps,
// an existing name; the recording goes on.
func TestSaveCheck(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, adapter, caps string
		cmd                 []string
		want                string
	}{
		{"no replay", "", `["freeform_recording"]`, nil, `does not advertise "replay"`},
		{"godot without --fixed-fps", GodotAdapterName, `["freeform_recording","replay"]`, []string{"godot", "--path", "."}, "--fixed-fps"},
		{"godot with --fixed-fps", GodotAdapterName, `["freeform_recording","replay"]`, []string{"godot", "--fixed-fps", "60", "--path", "."}, ""},
		{"godot through a script", GodotAdapterName, `["freeform_recording","replay"]`, []string{"./run-game.sh"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testService(t, "play", nil)
			l := s.Launcher.(*Launcher)
			s.gameCommand = tc.cmd // what the config says; the test game is launched
			l.Env["CAPPY_TEST_CAPS"], l.Env["CAPPY_TEST_ADAPTER"] = tc.caps, tc.adapter
			if _, err := s.EnsureFresh(ctx, 1); err != nil {
				t.Fatal(err)
			}
			op, err := s.Controller.Start(ctx, Request{Kind: KindRecording})
			if err != nil {
				t.Fatal(err)
			}
			err = s.SaveCheck("boss", false)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("SaveCheck: %v; want %q", err, tc.want)
			}
			if st := op.Status().Status; Final(st) {
				t.Fatalf("the recording is %s", st)
			}
		})
	}
	s := testService(t, "play", nil)
	os.MkdirAll(s.PlayDir(), 0o755)
	os.WriteFile(PlayPath(s.PlayDir(), "boss"), []byte("{}"), 0o644)
	if err := s.SaveCheck("boss", false); err == nil || !strings.Contains(err.Error(), "overwrite") {
		t.Fatalf("an existing name: %v", err)
	}
	if err := s.SaveCheck("boss", true); err != nil {
		t.Fatalf("overwrite: %v", err)
	}
	if err := s.SaveCheck("../boss", true); err == nil {
		t.Fatal("a name out of the folder was accepted")
	}
	if filepath.Base(s.PlayDir()) != "plays" {
		t.Fatalf("plays folder %s", s.PlayDir())
	}
}

func TestGodotOnWallClock(t *testing.T) {
	for cmd, want := range map[string]bool{
		"godot --path .": true,
		"xvfb-run -a /opt/Godot_v4.6-stable_linux.x86_64 --path .": true,
		"godot --fixed-fps 60 --path .":                            false,
		"godot --write-movie out.avi --path .":                     false,
		"./run-game.sh":                                            false, // the addon tells
		"mono bin/arena.exe":                                       false,
	} {
		if got := GodotOnWallClock(strings.Fields(cmd)); got != want {
			t.Errorf("%s: %v, want %v", cmd, got, want)
		}
	}
}

// Plays lists each saved play from its file, read again once the file
// changed, and says when its last result here was of another version.
func TestPlaysListing(t *testing.T) {
	ctx := context.Background()
	s := testService(t, "play", nil)
	os.MkdirAll(s.PlayDir(), 0o755)
	write := func(events int) {
		p := &Play{Format: PlayFormatVersion, Game: "g", Adapter: "a", LengthMs: 1000, Replay: PlayReplay{Format: "f", JSON: json.RawMessage(`{}`)}, Pictures: []PlayPicture{}}
		for i := range events {
			p.Events = append(p.Events, PlayEvent{T: float64(i), Event: "E"})
		}
		data, err := encodePlay(p)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(PlayPath(s.PlayDir(), "a"), data, 0o644)
	}
	write(2)
	os.WriteFile(PlayPath(s.PlayDir(), "broken"), []byte("{"), 0o644)
	items, _, err := s.Plays(ctx)
	if err != nil || len(items) != 2 || items[0].Events != 2 || items[1].Problem == "" {
		t.Fatalf("%v %+v", err, items)
	}
	lp, err := LoadPlay(s.PlayDir(), "a")
	if err != nil {
		t.Fatal(err)
	}
	s.RecordPlayResult(ctx, &PlayOutcome{Name: "a", Status: PlayPassed, fileSHA: lp.SHA256})
	if items, _, _ = s.Plays(ctx); items[0].Last == nil || items[0].Last.Status != PlayPassed || items[0].LastOlder {
		t.Fatalf("after a run: %+v", items[0])
	}
	write(5)
	if items, _, _ = s.Plays(ctx); items[0].Events != 5 || !items[0].LastOlder {
		t.Fatalf("after an edit: %+v", items[0])
	}
}
