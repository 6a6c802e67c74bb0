package cappy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/crosscode/crosscode-mcp/bridge/cappy/visual"
	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
)

// Saved plays (a play that stays: a regression test). A recording saved
// with a name is written into the repository, under the plays folder, as
// files a reviewer reads in a diff:
//
//	NAME.play.json        the play: what to replay and what to expect
//	data/SHA256.jpg       its expected pictures, content-addressed
//	data/SHA256.bin       its replay payload, when it is not JSON
//
// Running a play imports its expectation into the capture store as an
// operation of kind "play" (once per version of its file), replays its
// payload, and compares the replay with it as the replay tool compares a
// replay with its recording: events, then pictures.

// PlayFormatVersion is the version of the play files this build writes
// and reads.
const PlayFormatVersion = 1

// Saved play limits and names.
const (
	PlayExt = ".play.json"
	// PlayDataDir is the plays folder's subfolder of content-addressed
	// files (pictures, binary replay payloads).
	PlayDataDir = "data"
	// MaxPlayFileBytes bounds a play file and each of its data files.
	MaxPlayFileBytes = 64 << 20
	// PlayPictureWidth is the widest expected picture a play keeps: small
	// enough that a minute of play at the default fps stays under 1 MiB,
	// large enough to compare (comparisons reduce frames to 64 cells
	// wide) and for a person to see what changed.
	PlayPictureWidth   = 256
	playPictureQuality = 70
	// maxEmbeddedReplay is the largest JSON replay payload a play file
	// holds itself (larger ones go to a data file).
	maxEmbeddedReplay = 1 << 20
	// DefaultToleranceMs is how far an event's t may move and still match.
	DefaultToleranceMs = 50
)

// KindPlay is the capture kind of a saved play's imported expectation.
const KindPlay = "play"

var (
	playNameRE = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$`)
	dataRefRE  = regexp.MustCompile(`^` + PlayDataDir + `/([0-9a-f]{64})\.(jpg|png|bin)$`)
)

// CheckPlayName checks a saved play's name: letters, digits, '-', '_' and
// '.', at most 64, not starting with '.'; so it never leaves the folder.
func CheckPlayName(name string) error {
	if !playNameRE.MatchString(name) || strings.HasSuffix(name, ".") {
		return fmt.Errorf("play name %q: use letters, digits, '-', '_' and '.', at most 64, not starting or ending with '.' (e.g. boss-fight)", name)
	}
	return nil
}

// Play is a saved play file (NAME.play.json). Its name is its file's.
type Play struct {
	Format int `json:"crosscodePlay" jsonschema_description:"The play file's format version (1)."`
	// Game and Adapter are the game's id and adapter's name in its hello,
	// when it was recorded; a game that says otherwise does not run it.
	Game           string      `json:"game"`
	Adapter        string      `json:"adapter"`
	AdapterVersion string      `json:"adapterVersion,omitempty"`
	Build          string      `json:"build,omitempty"`
	Recorded       PlayOrigin  `json:"recorded"`
	Updated        *PlayOrigin `json:"updated,omitempty"`
	// Seed is the seed of the game's randomness it was recorded with.
	Seed *int64 `json:"seed,omitempty"`
	// Frames is the frame rate and width it was recorded with (absent:
	// without pictures).
	Frames *PlayFrames `json:"frames,omitempty"`
	// Tolerance, when a person sets it, overrides the defaults of the
	// comparison for this play.
	Tolerance *PlayTolerance `json:"tolerance,omitempty"`
	// LengthMs is the play's own length: where it ended, in game time.
	LengthMs float64    `json:"lengthMs"`
	Replay   PlayReplay `json:"replay"`
	// Events is the expected event timeline, Pictures the expected
	// pictures (each in data/).
	Events   []PlayEvent   `json:"events"`
	Pictures []PlayPicture `json:"pictures"`
}

// PlayOrigin says where and when a play's expectation was made.
type PlayOrigin struct {
	At     time.Time `json:"at"`
	Commit string    `json:"commit,omitempty"`
	Op     string    `json:"op,omitempty"`
}

// PlayFrames is the frames a play was recorded with.
type PlayFrames struct {
	FPS      float64 `json:"fps"`
	MaxWidth int     `json:"maxWidth,omitempty"`
}

// PlayTolerance overrides the comparison's defaults for one play.
type PlayTolerance struct {
	// EventsMs is how far an event's t may move (default 50).
	EventsMs float64 `json:"eventsMs,omitempty"`
	// Diff and Cell are the picture thresholds (defaults: the capture
	// config's frames.divergenceThreshold and divergenceCellThreshold).
	Diff float64 `json:"diff,omitempty"`
	Cell float64 `json:"cell,omitempty"`
}

// PlayReplay is what the adapter replays: its payload in the play file
// (JSON), or in a data file.
type PlayReplay struct {
	Format string          `json:"format"`
	JSON   json.RawMessage `json:"json,omitempty"`
	File   string          `json:"file,omitempty"`
	SHA256 string          `json:"sha256,omitempty"`
	Bytes  int64           `json:"bytes,omitempty"`
}

// PlayEvent is one expected event.
type PlayEvent struct {
	T          float64         `json:"t"`
	Event      string          `json:"event"`
	DurationMs *float64        `json:"durationMs,omitempty"`
	Payload    json.RawMessage `json:"payload,omitempty"`
}

// PlayPicture is one expected picture.
type PlayPicture struct {
	T      float64 `json:"t"`
	File   string  `json:"file"`
	Width  int     `json:"width"`
	Height int     `json:"height"`
	Reason string  `json:"reason,omitempty"`
}

// PlayError is a play that cannot be read or run: its file and what is
// wrong, said so that a person can fix it.
type PlayError struct {
	File string
	Msg  string
}

func (e *PlayError) Error() string { return e.File + ": " + e.Msg }

func playErr(file, format string, a ...any) *PlayError {
	return &PlayError{File: file, Msg: fmt.Sprintf(format, a...)}
}

// LoadedPlay is a play read and checked, with where it lives.
type LoadedPlay struct {
	*Play
	Name string
	Dir  string // the plays folder
	Path string // its file
	// SHA256 is the play file's, which names its imported expectation.
	SHA256  string
	payload []byte // the replay payload to send
}

// PlayPath is the file of the play name in the plays folder dir.
func PlayPath(dir, name string) string { return filepath.Join(dir, name+PlayExt) }

// ListPlays returns the names of the plays in dir, sorted; none when the
// folder does not exist.
func ListPlays(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("plays folder %s: %w", dir, err)
	}
	var names []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), PlayExt); ok && !e.IsDir() {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// readLimited reads a regular file of at most MaxPlayFileBytes.
func readLimited(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errors.New("missing")
		}
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if fi.Size() > MaxPlayFileBytes {
		return nil, fmt.Errorf("%d bytes, over the %d MiB a play file may have", fi.Size(), MaxPlayFileBytes>>20)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxPlayFileBytes+1))
	if err == nil && len(data) > MaxPlayFileBytes {
		err = fmt.Errorf("over the %d MiB a play file may have", MaxPlayFileBytes>>20)
	}
	return data, err
}

// LoadPlay reads the play name from the plays folder dir and checks it
// whole: its JSON, its format version, every reference, and every data
// file's SHA-256. What is wrong is a *PlayError naming the file.
func LoadPlay(dir, name string) (*LoadedPlay, error) {
	path := PlayPath(dir, name)
	if err := CheckPlayName(name); err != nil {
		return nil, playErr(path, "%v", err)
	}
	data, err := readLimited(path)
	if err != nil {
		return nil, playErr(path, "%v", err)
	}
	var p Play
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, playErr(path, "not a saved play (%s): record it again, or restore it from version control", jsonProblem(data, err))
	}
	if dec.More() {
		return nil, playErr(path, "not a saved play: something follows its JSON object")
	}
	switch {
	case p.Format == 0:
		return nil, playErr(path, "not a saved play: no \"crosscodePlay\" format version")
	case p.Format != PlayFormatVersion:
		return nil, playErr(path, "format version %d, and this crosscode-mcp reads version %d: update crosscode-mcp (or record the play again with this one)", p.Format, PlayFormatVersion)
	}
	lp := &LoadedPlay{Play: &p, Name: name, Dir: dir, Path: path}
	sum := sha256.Sum256(data)
	lp.SHA256 = hex.EncodeToString(sum[:])
	if err := lp.check(); err != nil {
		return nil, err
	}
	return lp, nil
}

// jsonProblem says where a play file's JSON breaks.
func jsonProblem(data []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	off := int64(-1)
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "it ends early: truncated"
	}
	if off < 0 {
		return err.Error()
	}
	line := 1 + bytes.Count(data[:min(int(off), len(data))], []byte("\n"))
	return fmt.Sprintf("line %d: %v", line, err)
}

// check checks a decoded play's values and data files.
func (lp *LoadedPlay) check() error {
	p := lp.Play
	if p.Game == "" || p.Adapter == "" {
		return playErr(lp.Path, "no game or adapter: record it again")
	}
	if p.Seed != nil {
		if err := protocol.CheckSeed(*p.Seed); err != nil {
			return playErr(lp.Path, "seed: %v", err)
		}
	}
	if f := p.Frames; f != nil && (f.FPS < protocol.MinFrameFPS || f.FPS > protocol.MaxFrameFPS || f.MaxWidth < 0 || f.MaxWidth > protocol.MaxFrameSide) {
		return playErr(lp.Path, "frames: fps from %g to %g and maxWidth at most %d", protocol.MinFrameFPS, float64(protocol.MaxFrameFPS), protocol.MaxFrameSide)
	}
	if t := p.Tolerance; t != nil && (t.EventsMs < 0 || t.Diff < 0 || t.Diff > 1 || t.Cell < 0 || t.Cell > 1) {
		return playErr(lp.Path, "tolerance: eventsMs at least 0, diff and cell from 0 to 1")
	}
	r := &p.Replay
	if r.Format == "" {
		return playErr(lp.Path, "replay: no format")
	}
	switch {
	case len(r.JSON) > 0 && r.File == "":
		var buf bytes.Buffer
		if err := json.Compact(&buf, r.JSON); err != nil {
			return playErr(lp.Path, "replay.json: %v", err)
		}
		lp.payload = buf.Bytes()
	case len(r.JSON) == 0 && r.File != "":
		data, err := lp.readData(r.File, "replay.file")
		if err != nil {
			return err
		}
		if sha := dataRefRE.FindStringSubmatch(r.File)[1]; r.SHA256 != "" && r.SHA256 != sha {
			return playErr(lp.Path, "replay.sha256 %s is not its file's name %s", r.SHA256, r.File)
		}
		lp.payload = data
	default:
		return playErr(lp.Path, "replay: give json (the payload) or file (data/SHA256.bin), one of them")
	}
	for i, e := range p.Events {
		if e.Event == "" {
			return playErr(lp.Path, "events[%d]: no event name", i)
		}
		if len(e.Payload) > 0 && !json.Valid(e.Payload) {
			return playErr(lp.Path, "events[%d].payload is not JSON", i)
		}
	}
	for i, pic := range p.Pictures {
		if pic.Width <= 0 || pic.Height <= 0 {
			return playErr(lp.Path, "pictures[%d]: no width or height", i)
		}
		if _, err := lp.readData(pic.File, fmt.Sprintf("pictures[%d].file", i)); err != nil {
			return err
		}
	}
	return nil
}

// readData reads a data file a play refers to and checks its SHA-256
// against its name.
func (lp *LoadedPlay) readData(ref, field string) ([]byte, error) {
	m := dataRefRE.FindStringSubmatch(ref)
	if m == nil {
		return nil, playErr(lp.Path, "%s %q is not a file of the plays folder's %s/ (data/SHA256.jpg, .png or .bin): a play refers to nothing outside it", field, ref, PlayDataDir)
	}
	path := filepath.Join(lp.Dir, filepath.FromSlash(ref))
	data, err := readLimited(path)
	if err != nil {
		return nil, playErr(path, "%v (%s of %s): restore it from version control, or record the play again", err, field, filepath.Base(lp.Path))
	}
	if got := sha256Hex(data); got != m[1] {
		return nil, playErr(path, "its SHA-256 is %s, not the %s its name says: the file was altered (%s of %s); restore it, or record the play again", got, m[1], field, filepath.Base(lp.Path))
	}
	return data, nil
}

// Payload is the replay payload the play sends.
func (lp *LoadedPlay) Payload() []byte { return lp.payload }

// ToleranceMs is how far an event's t may move in this play.
func (lp *LoadedPlay) ToleranceMs() float64 {
	if t := lp.Tolerance; t != nil && t.EventsMs > 0 {
		return t.EventsMs
	}
	return DefaultToleranceMs
}

// encodePlay writes a play file: one key per line, and one event or
// picture per line, so that a diff shows what changed.
func encodePlay(p *Play) ([]byte, error) {
	head := *p
	events, pictures := head.Events, head.Pictures
	head.Events, head.Pictures = nil, nil
	const mark = `"\u0000replay"`
	var payload []byte
	if len(head.Replay.JSON) > 0 {
		var err error
		if payload, err = layoutJSON(head.Replay.JSON, "    "); err != nil {
			return nil, err
		}
		head.Replay.JSON = json.RawMessage(mark)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&head); err != nil {
		return nil, err
	}
	// Cut `"events": null, "pictures": null` and the closing brace: the
	// two lists are written below, an item a line.
	out := buf.Bytes()
	if payload != nil {
		out = bytes.Replace(out, []byte(mark), payload, 1)
	}
	i := bytes.LastIndex(out, []byte(",\n  \"events\": null"))
	if i < 0 {
		return nil, errors.New("encode play: unexpected layout")
	}
	out = append([]byte{}, out[:i]...)
	line := func(v any) ([]byte, error) {
		var b bytes.Buffer
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false)
		if err := e.Encode(v); err != nil {
			return nil, err
		}
		return bytes.TrimRight(b.Bytes(), "\n"), nil
	}
	list := func(key string, n int, item func(int) any) error {
		out = append(out, ",\n  \""+key+"\": ["...)
		for i := range n {
			b, err := line(item(i))
			if err != nil {
				return err
			}
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, "\n    "...)
			out = append(out, b...)
		}
		if n > 0 {
			out = append(out, "\n  "...)
		}
		out = append(out, ']')
		return nil
	}
	if err := list("events", len(events), func(i int) any { return events[i] }); err != nil {
		return nil, err
	}
	if err := list("pictures", len(pictures), func(i int) any { return pictures[i] }); err != nil {
		return nil, err
	}
	return append(out, "\n}\n"...), nil
}

// layoutJSON lays a replay payload out for a diff: an object a key a line,
// an array under it an item a line, everything deeper on that line.
func layoutJSON(raw json.RawMessage, indent string) ([]byte, error) {
	compact := func(v json.RawMessage) ([]byte, error) {
		var b bytes.Buffer
		err := json.Compact(&b, v)
		return b.Bytes(), err
	}
	keys, obj, ok := orderedObject(raw)
	if !ok {
		return compact(raw) // not an object: one line
	}
	var out bytes.Buffer
	out.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			out.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		out.WriteString("\n" + indent + "  ")
		out.Write(kb)
		out.WriteString(": ")
		var items []json.RawMessage
		if json.Unmarshal(obj[k], &items) == nil && len(items) > 0 {
			out.WriteString("[")
			for j, it := range items {
				c, err := compact(it)
				if err != nil {
					return nil, err
				}
				if j > 0 {
					out.WriteByte(',')
				}
				out.WriteString("\n" + indent + "    ")
				out.Write(c)
			}
			out.WriteString("\n" + indent + "  ]")
			continue
		}
		c, err := compact(obj[k])
		if err != nil {
			return nil, err
		}
		out.Write(c)
	}
	if len(keys) > 0 {
		out.WriteString("\n" + indent)
	}
	out.WriteString("}")
	return out.Bytes(), nil
}

// orderedObject reads a JSON object's members in their order.
func orderedObject(raw json.RawMessage) ([]string, map[string]json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, false
	}
	var keys []string
	obj := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		k, isKey := t.(string)
		if err != nil || !isKey {
			return nil, nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, false
		}
		if _, dup := obj[k]; !dup {
			keys = append(keys, k)
		}
		obj[k] = v
	}
	return keys, obj, true
}

// PlayDir is the plays folder of this service's capture config.
func (s *Service) PlayDir() string { return s.playDir }

// SaveCheck is what can be told before a recording stops: whether it could
// be saved as name. A refused save changes nothing.
func (s *Service) SaveCheck(name string, overwrite bool) error {
	if err := CheckPlayName(name); err != nil {
		return inputf("%v", err)
	}
	if s.playDir == "" {
		return inputf("no plays folder: crosscode-mcp runs outside a repository")
	}
	if _, err := os.Lstat(PlayPath(s.playDir, name)); err == nil && !overwrite {
		return inputf("a play named %q exists (%s): choose another name, or pass overwrite: true to replace it", name, s.relPlay(PlayPath(s.playDir, name)))
	}
	a := s.Controller.Connected()
	if a == nil {
		return nil // the recording's own end says more
	}
	if !a.HasCapability(protocol.CapReplay) {
		return inputf("the game's adapter (%s) does not advertise %q: its plays cannot be replayed, so they cannot be saved (add replay support to the adapter)", a.Name, protocol.CapReplay)
	}
	return s.replayableLaunch(a)
}

// replayableLaunch refuses to save plays of a game whose launch makes its
// replays differ: Godot without a fixed frame step runs on the wall clock
// (told when its command visibly runs Godot; a script that starts it its
// own way is judged by the addon, whose warning reaches the agent), and
// so does a web game its own adapter drives (not the page driver's
// virtual time), which replays the same only when it is seeded.
func (s *Service) replayableLaunch(a *Adapter) error {
	if _, web := s.Launcher.(*BrowserLauncher); web && a.Name != PageAdapterName && !a.HasCapability(protocol.CapSeed) {
		return inputf("the web game's own adapter (%s) runs it on the wall clock and takes no seed (it does not advertise %q), so its replays may differ from its recording: advertise \"seed\" and seed the game's randomness with it (the JavaScript adapter: capabilities: ['seed'] and op.seed), or let crosscode-mcp drive the page on virtual time (\"adapter\": \"page\" in the capture config)", a.Name, protocol.CapSeed)
	}
	if a.Name == GodotAdapterName && GodotOnWallClock(s.gameCommand) {
		return inputf("the Godot game runs without --fixed-fps, on the wall clock, so its replays differ from its recording: add \"--fixed-fps\", \"60\" to game.command in the capture config (the project's physics rate), then record again")
	}
	return nil
}

// GodotOnWallClock reports whether a game command visibly runs Godot (a
// program named like it) without a fixed frame step (--fixed-fps, or
// --write-movie, which implies it).
func GodotOnWallClock(cmd []string) bool {
	named := false
	for _, a := range cmd {
		switch {
		case GodotFixedStepFlag(a):
			return false
		case strings.Contains(strings.ToLower(filepath.Base(a)), "godot"):
			named = true
		}
	}
	return named
}

// GodotFixedStepFlag reports whether a Godot argument fixes its frame step.
func GodotFixedStepFlag(a string) bool { return a == "--fixed-fps" || a == "--write-movie" }

// GodotAdapterName is the Godot addon's adapter name in its hello.
const GodotAdapterName = "cappy-godot"

func inputf(format string, a ...any) error {
	return errorf(protocol.CappyInvalidParameters, format, a...)
}

// relPlay names a play file relative to the repository when it is inside.
func (s *Service) relPlay(path string) string {
	if s.repoDir != "" {
		if r, err := filepath.Rel(s.repoDir, path); err == nil && filepath.IsLocal(r) {
			return filepath.ToSlash(r)
		}
	}
	return path
}

// SavedPlay is what SavePlay wrote.
type SavedPlay struct {
	Name     string  `json:"name"`
	File     string  `json:"file" jsonschema_description:"The play file, relative to the repository: commit it, with its data/ files."`
	Events   int     `json:"events"`
	Pictures int     `json:"pictures"`
	Bytes    int64   `json:"bytes" jsonschema_description:"The play's files' size: the play file and the data files it refers to."`
	LengthMs float64 `json:"lengthMs"`
}

// SavePlay writes the completed recording op as the play name, or
// replaces it with overwrite.
func (s *Service) SavePlay(ctx context.Context, op, name string, overwrite bool) (*SavedPlay, error) {
	if err := CheckPlayName(name); err != nil {
		return nil, inputf("%v", err)
	}
	c, err := s.Store.Capture(ctx, op)
	if err != nil {
		return nil, err
	}
	if c.Kind != KindRecording || c.Status != StatusCompleted || c.ReplaySHA == "" {
		return nil, inputf("operation %s is a %s, %s: only a completed recording with its replay can be saved", op, c.Kind, c.Status)
	}
	origin := PlayOrigin{At: time.Now().UTC().Truncate(time.Second), Commit: s.HeadCommit(ctx), Op: op}
	p := &Play{Format: PlayFormatVersion, Recorded: origin, Seed: c.Seed}
	p.Game, p.Build = c.Game, c.Build
	p.Adapter, p.AdapterVersion, _ = strings.Cut(c.Adapter, " ")
	var fr protocol.FramesRequest
	if len(c.FramesRequest) > 0 && json.Unmarshal(c.FramesRequest, &fr) == nil && fr.FPS > 0 {
		p.Frames = &PlayFrames{FPS: fr.FPS, MaxWidth: fr.MaxWidth}
	}
	rep, err := s.Store.Replay(ctx, c.ReplaySHA)
	if err != nil {
		return nil, err
	}
	payload, err := readLimited(rep.Path)
	if err != nil {
		return nil, fmt.Errorf("the recording's replay %s: %v", rep.Path, err)
	}
	if err := os.MkdirAll(filepath.Join(s.playDir, PlayDataDir), 0o755); err != nil {
		return nil, fmt.Errorf("plays folder: %w", err)
	}
	p.Replay.Format = rep.Format
	if json.Valid(payload) && len(payload) <= maxEmbeddedReplay {
		p.Replay.JSON = payload
	} else {
		ref, err := s.putPlayData(payload, "bin")
		if err != nil {
			return nil, err
		}
		p.Replay.File, p.Replay.SHA256, p.Replay.Bytes = ref, rep.SHA256, int64(len(payload))
	}
	if err := s.fillExpectation(ctx, p, op); err != nil {
		return nil, err
	}
	return s.writePlay(name, p, overwrite)
}

// fillExpectation sets a play's events, pictures and length from the
// stored operation op (a recording, or the replay that updates it).
func (s *Service) fillExpectation(ctx context.Context, p *Play, op string) error {
	p.Events, p.Pictures, p.LengthMs = []PlayEvent{}, []PlayPicture{}, 0
	for after := int64(0); ; {
		page, err := s.Store.Events(ctx, store.EventQuery{Op: op, AfterSeq: after, Limit: 1000})
		if err != nil {
			return err
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			p.Events = append(p.Events, PlayEvent{T: e.T, Event: e.Event, DurationMs: e.DurationMs, Payload: e.Payload})
			p.LengthMs = max(p.LengthMs, e.T)
		}
		after = page[len(page)-1].Seq
	}
	next := s.framePager(ctx, op)
	for f, ok := next(); ok; f, ok = next() {
		jpg, w, h, err := visual.AgentJPEG(s.framePath(&f), PlayPictureWidth, playPictureQuality)
		if err != nil {
			return fmt.Errorf("frame %d of %s: %w", f.Seq, op, err)
		}
		ref, err := s.putPlayData(jpg, "jpg")
		if err != nil {
			return err
		}
		p.Pictures = append(p.Pictures, PlayPicture{T: f.T, File: ref, Width: w, Height: h, Reason: f.Reason})
		p.LengthMs = max(p.LengthMs, f.T)
	}
	return nil
}

// putPlayData writes data into the plays folder's data/ under its
// SHA-256, once, and returns its reference.
func (s *Service) putPlayData(data []byte, ext string) (string, error) {
	ref := PlayDataDir + "/" + sha256Hex(data) + "." + ext
	path := filepath.Join(s.playDir, filepath.FromSlash(ref))
	if _, err := os.Stat(path); err == nil {
		return ref, nil
	}
	if err := writeFileAtomic(path, data); err != nil {
		return "", fmt.Errorf("plays folder: %w", err)
	}
	os.Chmod(path, 0o644) // a file of the repository, not a private one
	return ref, nil
}

// writePlay writes p as the play name (through a temporary file), then
// removes the data files no play refers to any more.
func (s *Service) writePlay(name string, p *Play, overwrite bool) (*SavedPlay, error) {
	data, err := encodePlay(p)
	if err != nil {
		return nil, err
	}
	path := PlayPath(s.playDir, name)
	if _, err := os.Lstat(path); err == nil && !overwrite {
		return nil, inputf("a play named %q exists (%s): choose another name, or pass overwrite: true to replace it", name, s.relPlay(path))
	}
	if err := writeFileAtomic(path, data); err != nil {
		return nil, fmt.Errorf("write play: %w", err)
	}
	os.Chmod(path, 0o644)
	s.collectPlayData()
	sp := &SavedPlay{Name: name, File: s.relPlay(path), Events: len(p.Events), Pictures: len(p.Pictures), Bytes: int64(len(data)), LengthMs: p.LengthMs}
	seen := map[string]bool{}
	for _, ref := range p.refs() {
		if !seen[ref] {
			seen[ref] = true
			if fi, err := os.Stat(filepath.Join(s.playDir, filepath.FromSlash(ref))); err == nil {
				sp.Bytes += fi.Size()
			}
		}
	}
	return sp, nil
}

// refs are the data files a play refers to.
func (p *Play) refs() []string {
	var refs []string
	if p.Replay.File != "" {
		refs = append(refs, p.Replay.File)
	}
	for _, pic := range p.Pictures {
		refs = append(refs, pic.File)
	}
	return refs
}

// collectPlayData removes the data files that no play of the folder refers
// to (an updated or overwritten play's old pictures). It removes nothing
// when any play file cannot be read: what it refers to is not known then.
func (s *Service) collectPlayData() {
	names, err := ListPlays(s.playDir)
	if err != nil {
		return
	}
	used := map[string]bool{}
	for _, n := range names {
		data, err := readLimited(PlayPath(s.playDir, n))
		if err != nil {
			return
		}
		var p Play
		if json.Unmarshal(data, &p) != nil {
			return
		}
		for _, r := range p.refs() {
			used[r] = true
		}
	}
	ents, err := os.ReadDir(filepath.Join(s.playDir, PlayDataDir))
	if err != nil {
		return
	}
	for _, e := range ents {
		ref := PlayDataDir + "/" + e.Name()
		if dataRefRE.MatchString(ref) && !used[ref] {
			os.Remove(filepath.Join(s.playDir, PlayDataDir, e.Name()))
		}
	}
}

// PlayItem is a saved play as list_captures shows it, with its last
// result here.
type PlayItem struct {
	Name     string  `json:"name"`
	LengthMs float64 `json:"lengthMs,omitempty"`
	Events   int     `json:"events"`
	Pictures int     `json:"pictures"`
	// Problem says why the play file cannot be read.
	Problem string `json:"problem,omitempty"`
	// Last is its last run here; LastOlder is set when that run was of
	// an older version of its file.
	Last      *store.PlayResult `json:"last,omitempty"`
	LastOlder bool              `json:"lastOlder,omitempty"`
}

// MaxListedPlays is the most saved plays a listing names.
const MaxListedPlays = 100

// Plays lists the saved plays with their last result here (at most
// MaxListedPlays, and how many more there are).
func (s *Service) Plays(ctx context.Context) ([]PlayItem, int, error) {
	if s.playDir == "" {
		return nil, 0, nil
	}
	names, err := ListPlays(s.playDir)
	if err != nil {
		return nil, 0, err
	}
	more := 0
	if len(names) > MaxListedPlays {
		names, more = names[:MaxListedPlays], len(names)-MaxListedPlays
	}
	last, err := s.Store.PlayResults(ctx)
	if err != nil {
		return nil, 0, err
	}
	items := make([]PlayItem, 0, len(names))
	for _, n := range names {
		sum := s.playSummary(PlayPath(s.playDir, n))
		it := PlayItem{Name: n, LengthMs: sum.lengthMs, Events: sum.events, Pictures: sum.pictures, Problem: sum.problem}
		if r, ok := last[n]; ok {
			r.Message = sanitize.Line(r.Message, 300)
			it.Last = &r
			it.LastOlder = sum.sha != "" && r.FileSHA != "" && r.FileSHA != sum.sha
		}
		items = append(items, it)
	}
	return items, more, nil
}

// playSummary is what a listing says of a play file, read again only when
// its size or time changed: plays are large, and list_captures lists them
// at every first page.
type playSummary struct {
	size             int64
	mod              time.Time
	lengthMs         float64
	events, pictures int
	problem, sha     string
}

func (s *Service) playSummary(path string) playSummary {
	fi, err := os.Stat(path)
	if err != nil {
		return playSummary{problem: sanitize.Line(err.Error(), 300)}
	}
	s.playsMu.Lock()
	sum, ok := s.playSums[path]
	s.playsMu.Unlock()
	if ok && sum.size == fi.Size() && sum.mod.Equal(fi.ModTime()) {
		return sum
	}
	sum = playSummary{size: fi.Size(), mod: fi.ModTime()}
	data, err := readLimited(path)
	var p Play
	if err == nil {
		sum.sha = sha256Hex(data)
		err = json.Unmarshal(data, &p)
	}
	if err != nil {
		sum.problem = sanitize.Line(err.Error(), 300)
	} else {
		sum.lengthMs, sum.events, sum.pictures = p.LengthMs, len(p.Events), len(p.Pictures)
	}
	s.playsMu.Lock()
	if s.playSums == nil {
		s.playSums = map[string]playSummary{}
	}
	s.playSums[path] = sum
	s.playsMu.Unlock()
	return sum
}
