package hooks

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

// InstallConfig says which client's settings file to change, and how the
// client starts the hook.
type InstallConfig struct {
	// Client is claude-code, gemini or codex.
	Client string
	// Scope is project (the repository's settings, default) or user (the
	// user's, for every project).
	Scope string
	// Top is the repository's top directory (project scope).
	Top string
	// Home is the user's home directory (user scope). Default os.UserHomeDir.
	Home string
	// Command starts crosscode-mcp's hook, as the client's shell reads it,
	// up to the client and event it appends (e.g. `'/usr/local/bin/crosscode-mcp' hook`,
	// with server flags after "hook" when the MCP server has them).
	Command string
	// StateDir keeps what install changed, so uninstall restores the file
	// byte for byte. Default: crosscode-mcp/hooks-installed in the user's
	// config dir.
	StateDir string
}

// Scopes are the places a client reads its settings from.
var Scopes = []string{"project", "user"}

// hookEvents are the events crosscode-mcp hooks, per client, with the
// matcher of the file-editing tools where the event takes one.
var hookEvents = map[string][]struct{ event, matcher string }{
	"claude-code": {{"PreToolUse", "Edit|Write|MultiEdit|NotebookEdit"}, {"SessionStart", ""}, {"UserPromptSubmit", ""}},
	"gemini":      {{"BeforeTool", "write_file|replace"}, {"SessionStart", ""}, {"BeforeAgent", ""}},
	// Codex names its edit tool apply_patch, but a patch may also come
	// through its shell tool: the hook reads every call's input.
	"codex": {{"PreToolUse", ""}, {"SessionStart", ""}, {"UserPromptSubmit", ""}},
}

// ourCommand recognizes the commands install writes: `crosscode-mcp hook
// ...`, or the hook client beside it, `crosscode-hook ...` (not the
// packages' launcher, crosscode-hook.cmd). (Compiled on first
// use, as the other patterns here: a hook run that needs none of them
// does not pay for them at its start.)
var ourCommand = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(\shook|crosscode-hook['"]?)\s(.*\s)?(claude-code|gemini|codex) [A-Za-z]+\s*$`)
})

// SettingsPath is the settings file of client in scope.
func SettingsPath(cfg InstallConfig) (string, error) {
	base := cfg.Top
	switch cfg.Scope {
	case "", "project":
		if base == "" {
			return "", errors.New("project scope needs the repository")
		}
	case "user":
		base = cfg.Home
		if base == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", err
			}
			base = h
		}
	default:
		return "", fmt.Errorf("unknown scope %q (project, user)", cfg.Scope)
	}
	switch cfg.Client {
	case "claude-code":
		return filepath.Join(base, ".claude", "settings.json"), nil
	case "gemini":
		return filepath.Join(base, ".gemini", "settings.json"), nil
	case "codex":
		if cfg.Scope == "user" {
			return filepath.Join(CodexHome(base), "config.toml"), nil
		}
		return filepath.Join(base, ".codex", "config.toml"), nil
	}
	return "", fmt.Errorf("unknown client %q (%s)", cfg.Client, strings.Join(Clients, ", "))
}

// CodexHome is where Codex keeps its user configuration: CODEX_HOME when
// set (Codex reads it whatever HOME is), else home/.codex.
func CodexHome(home string) string {
	if dir := os.Getenv("CODEX_HOME"); dir != "" {
		return dir
	}
	return filepath.Join(home, ".codex")
}

// record is what install changed in a settings file: the spans it added
// (start and length in the file as install wrote it) and the digest of
// that file, so uninstall can take out exactly those bytes while the file
// is as install left it.
type record struct {
	Path    string   `json:"path"`
	After   string   `json:"after"` // SHA-256 of the file install wrote
	Spans   [][2]int `json:"spans"`
	Created bool     `json:"created,omitempty"` // install created the file
}

func (cfg InstallConfig) recordPath(settings string) (string, error) {
	dir := cfg.StateDir
	if dir == "" {
		d, err := os.UserConfigDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(d, "crosscode-mcp", "hooks-installed")
	}
	abs, _ := filepath.Abs(settings)
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(dir, hex.EncodeToString(sum[:12])+".json"), nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// insertion adds text at offset of the original file.
type insertion struct {
	at   int
	text string
}

// Install adds crosscode-mcp's hook entries to the client's settings file
// and reports the file and whether it changed: nothing changes when they
// are there already. No other byte of the file changes.
func Install(cfg InstallConfig) (path string, changed bool, err error) {
	if path, err = SettingsPath(cfg); err != nil {
		return "", false, err
	}
	if strings.TrimSpace(cfg.Command) == "" {
		return path, false, errors.New("no hook command")
	}
	old, err := os.ReadFile(path)
	created := errors.Is(err, os.ErrNotExist)
	if err != nil && !created {
		return path, false, err
	}
	var ins []insertion
	if cfg.Client == "codex" {
		ins = tomlInsertions(old, cfg)
	} else if ins, err = jsonInsertions(old, cfg); err != nil {
		return path, false, fmt.Errorf("%s: %w", path, err)
	}
	if len(ins) == 0 {
		return path, false, nil
	}
	sort.Slice(ins, func(i, j int) bool { return ins[i].at < ins[j].at })
	var out bytes.Buffer
	rec := record{Path: path, Created: created}
	last := 0
	for _, in := range ins {
		out.Write(old[last:in.at])
		rec.Spans = append(rec.Spans, [2]int{out.Len(), len(in.text)})
		out.WriteString(in.text)
		last = in.at
	}
	out.Write(old[last:])
	// Never write a file the client could not read.
	if cfg.Client == "codex" {
		var v map[string]any
		if _, err := toml.Decode(out.String(), &v); err != nil {
			return path, false, fmt.Errorf("%s: adding the hooks would make it invalid TOML (%v); does it define [hooks] entries inline? add them by hand, or move yours to [[hooks.EVENT]] tables", path, err)
		}
	} else if _, err := parseJSONC(out.Bytes()); err != nil {
		return path, false, fmt.Errorf("%s: adding the hooks would make it invalid: %w", path, err)
	}
	rec.After = digest(out.Bytes())
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return path, false, err
	}
	if err := writeFileAtomic(path, out.Bytes()); err != nil {
		return path, false, err
	}
	if rp, err := cfg.recordPath(path); err == nil {
		b, _ := json.Marshal(rec)
		if os.MkdirAll(filepath.Dir(rp), 0o700) == nil {
			os.WriteFile(rp, b, 0o600)
		}
	}
	return path, true, nil
}

// Uninstall removes exactly crosscode-mcp's hook entries from the
// client's settings file. While the file is as install left it, what
// install added is taken out byte for byte (and a file install created is
// removed); after other edits, the entries are removed from the parsed
// file and the rest is kept as it is.
func Uninstall(cfg InstallConfig) (path string, changed bool, err error) {
	if path, err = SettingsPath(cfg); err != nil {
		return "", false, err
	}
	cur, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return path, false, nil
	}
	if err != nil {
		return path, false, err
	}
	rp, rerr := cfg.recordPath(path)
	var rec record
	if rerr == nil {
		if b, err := os.ReadFile(rp); err == nil && json.Unmarshal(b, &rec) == nil && rec.After == digest(cur) {
			out := cur
			for i := len(rec.Spans) - 1; i >= 0; i-- {
				s := rec.Spans[i]
				out = append(out[:s[0]:s[0]], out[s[0]+s[1]:]...)
			}
			os.Remove(rp)
			if rec.Created && len(bytes.TrimSpace(out)) == 0 {
				return path, true, os.Remove(path)
			}
			return path, true, writeFileAtomic(path, out)
		}
	}
	var out []byte
	if cfg.Client == "codex" {
		out = tomlRemove(cur)
	} else if out, err = jsonRemove(cur); err != nil {
		return path, false, fmt.Errorf("%s: %w", path, err)
	}
	if bytes.Equal(out, cur) {
		return path, false, nil
	}
	if rerr == nil {
		os.Remove(rp)
	}
	return path, true, writeFileAtomic(path, out)
}

// Installed lists the events of client whose crosscode-mcp entries the
// settings file at path holds.
func Installed(client, path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var events []string
	if client == "codex" {
		for _, m := range tomlCommand().FindAllStringSubmatch(string(b), -1) {
			if ev := eventOf(m[1]); ev != "" && !slices.Contains(events, ev) {
				events = append(events, ev)
			}
		}
		return events, nil
	}
	root, err := parseJSONC(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	hooks := root.member("hooks")
	if hooks == nil || hooks.kind != '{' {
		return nil, nil
	}
	for _, m := range hooks.members {
		if ourGroups(m.value) != nil && !slices.Contains(events, m.key) {
			events = append(events, m.key)
		}
	}
	return events, nil
}

// eventOf is the event a command of ours hooks.
func eventOf(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) == 0 || !ourCommand().MatchString(cmd) {
		return ""
	}
	return f[len(f)-1]
}

func writeFileAtomic(path string, b []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), mode)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// entry is one matcher group of crosscode-mcp's, as the JSON clients read it.
func entry(cfg InstallConfig, event, matcher string) map[string]any {
	h := map[string]any{"type": "command", "command": cfg.Command + " " + cfg.Client + " " + event}
	if cfg.Client == "gemini" {
		h["name"] = "crosscode-mcp"
		h["timeout"] = 10000 // milliseconds
	} else {
		h["timeout"] = 10 // seconds
	}
	g := map[string]any{"hooks": []any{h}}
	if matcher != "" {
		g["matcher"] = matcher
	}
	return g
}

// jsonInsertions computes the text to add to a JSON settings file.
func jsonInsertions(old []byte, cfg InstallConfig) ([]insertion, error) {
	unit := indentUnit(old)
	if len(bytes.TrimSpace(old)) == 0 {
		hooks := map[string]any{}
		for _, e := range hookEvents[cfg.Client] {
			hooks[e.event] = []any{entry(cfg, e.event, e.matcher)}
		}
		b, _ := marshalIndent(map[string]any{"hooks": hooks}, "", unit)
		return []insertion{{at: len(old), text: string(b) + "\n"}}, nil
	}
	root, err := parseJSONC(old)
	if err != nil {
		return nil, err
	}
	if root.kind != '{' {
		return nil, errors.New("the settings are not a JSON object")
	}
	hooks := root.member("hooks")
	if hooks != nil && hooks.kind != '{' {
		return nil, errors.New(`"hooks" is not an object`)
	}
	var members []string // new members of hooks, as "key": value at depth 2
	var ins []insertion
	missing := map[string]any{}
	for _, e := range hookEvents[cfg.Client] {
		arr := hooks.member(e.event)
		if arr != nil && ourGroups(arr) != nil {
			continue // there already
		}
		g := entry(cfg, e.event, e.matcher)
		switch {
		case hooks == nil:
			missing[e.event] = []any{g}
		case arr == nil:
			b, _ := marshalIndent([]any{g}, strings.Repeat(unit, 2), unit)
			members = append(members, fmt.Sprintf("%q: %s", e.event, b))
		case arr.kind != '[':
			return nil, fmt.Errorf("hooks.%s is not an array", e.event)
		default:
			b, _ := marshalIndent(g, strings.Repeat(unit, 3), unit)
			ins = append(ins, appendTo(old, arr, string(b), unit, 3))
		}
	}
	if hooks == nil && len(missing) > 0 {
		b, _ := marshalIndent(missing, unit, unit)
		ins = append(ins, appendTo(old, root, `"hooks": `+string(b), unit, 1))
	}
	if len(members) > 0 {
		ins = append(ins, appendTo(old, hooks, strings.Join(members, ",\n"+strings.Repeat(unit, 2)), unit, 2))
	}
	return ins, nil
}

// appendTo adds value (already indented for depth past its first line) as
// the last member or element of container n.
func appendTo(old []byte, n *jnode, value, unit string, depth int) insertion {
	last := -1
	if n.kind == '{' && len(n.members) > 0 {
		last = n.members[len(n.members)-1].value.end
	}
	if n.kind == '[' && len(n.elems) > 0 {
		last = n.elems[len(n.elems)-1].end
	}
	nl := "\n"
	if bytes.Contains(old, []byte("\r\n")) {
		nl = "\r\n"
		value = strings.ReplaceAll(value, "\n", "\r\n")
	}
	if last >= 0 {
		return insertion{at: last, text: "," + nl + strings.Repeat(unit, depth) + value}
	}
	return insertion{at: n.start + 1, text: nl + strings.Repeat(unit, depth) + value + nl + strings.Repeat(unit, depth-1)}
}

// indentUnit guesses a file's indentation step: the white space that
// starts its first indented line; two spaces when there is none.
func indentUnit(b []byte) string {
	for _, line := range strings.Split(string(b), "\n") {
		t := strings.TrimLeft(line, " \t")
		if t != "" && len(t) < len(line) {
			return line[:len(line)-len(t)]
		}
	}
	return "  "
}

// ourGroups returns the indexes of the matcher groups in arr whose hooks
// are all crosscode-mcp's (nil when none).
func ourGroups(arr *jnode) []int {
	if arr == nil || arr.kind != '[' {
		return nil
	}
	var out []int
	for i, g := range arr.elems {
		hs := g.member("hooks")
		if hs == nil || hs.kind != '[' || len(hs.elems) == 0 {
			continue
		}
		all := true
		for _, h := range hs.elems {
			c := h.member("command")
			if c == nil || c.kind != '"' || !ourCommand().MatchString(c.str) {
				all = false
			}
		}
		if all {
			out = append(out, i)
		}
	}
	return out
}

// jsonRemove removes crosscode-mcp's matcher groups from a JSON settings
// file that changed since install, with the commas around them; the
// arrays and objects that held them stay.
func jsonRemove(cur []byte) ([]byte, error) {
	root, err := parseJSONC(cur)
	if err != nil {
		return nil, err
	}
	hooks := root.member("hooks")
	if hooks == nil || hooks.kind != '{' {
		return cur, nil
	}
	var cuts [][2]int
	for _, m := range hooks.members {
		arr := m.value
		idx := ourGroups(arr)
		for k := len(idx) - 1; k >= 0; k-- {
			i := idx[k]
			el := arr.elems[i]
			switch {
			case i > 0 && !slices.Contains(idx, i-1):
				cuts = append(cuts, [2]int{arr.elems[i-1].end, el.end})
			case i+1 < len(arr.elems):
				cuts = append(cuts, [2]int{el.start, arr.elems[i+1].start})
			default:
				cuts = append(cuts, [2]int{arr.start + 1, arr.end - 1})
			}
		}
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i][0] > cuts[j][0] })
	out := slices.Clone(cur)
	for _, c := range cuts {
		out = append(out[:c[0]:c[0]], out[c[1]:]...)
	}
	return out, nil
}

// Codex reads hooks from config.toml's [hooks] table. Install appends a
// block of array tables between two marker comments; a file changed since
// loses the block between the markers.

const (
	tomlBegin = "# >>> crosscode-mcp hooks (crosscode-mcp hooks uninstall --client codex removes this block)"
	tomlEnd   = "# <<< crosscode-mcp hooks"
)

var tomlCommand = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^command = "(.*)"\s*$`) })

func tomlInsertions(old []byte, cfg InstallConfig) []insertion {
	if bytes.Contains(old, []byte(tomlBegin)) {
		return nil
	}
	var b strings.Builder
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		b.WriteString("\n")
	}
	if len(old) > 0 {
		b.WriteString("\n")
	}
	b.WriteString(tomlBegin + "\n")
	for _, e := range hookEvents[cfg.Client] {
		fmt.Fprintf(&b, "[[hooks.%s]]\n", e.event)
		if e.matcher != "" {
			fmt.Fprintf(&b, "matcher = %s\n", tomlString(e.matcher))
		}
		fmt.Fprintf(&b, "[[hooks.%s.hooks]]\ntype = \"command\"\ncommand = %s\n", e.event, tomlString(cfg.Command+" "+cfg.Client+" "+e.event))
	}
	b.WriteString(tomlEnd + "\n")
	return []insertion{{at: len(old), text: b.String()}}
}

// tomlString writes s as a TOML basic string.
func tomlString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`, "\r", `\r`)
	return `"` + r.Replace(s) + `"`
}

func tomlRemove(cur []byte) []byte {
	s := string(cur)
	i := strings.Index(s, tomlBegin)
	if i < 0 {
		return cur
	}
	j := strings.Index(s[i:], tomlEnd)
	if j < 0 {
		return cur
	}
	end := i + j + len(tomlEnd)
	if end < len(s) && s[end] == '\n' {
		end++
	}
	// The blank line install put before the block.
	if strings.HasSuffix(s[:i], "\n\n") {
		i--
	}
	return []byte(s[:i] + s[end:])
}

// marshalIndent is json.MarshalIndent without HTML escaping (a command
// may hold & or <).
func marshalIndent(v any, prefix, indent string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, indent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
