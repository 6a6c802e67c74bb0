package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crosscode/crosscode-mcp/internal/testing/mddoc"
	"github.com/crosscode/crosscode-mcp/internal/testing/pgtest"
	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// docFiles are the README and the guides in docs/, relative to the
// repository's root: the documents whose commands and links are tested.
func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil || len(docs) < 10 {
		t.Fatalf("docs/*.md: %d files (%v); the guides are missing", len(docs), err)
	}
	files := []string{"README.md"}
	for _, d := range docs {
		files = append(files, "docs/"+filepath.Base(d))
	}
	return files
}

// docCommand is one command line of a document's ```sh blocks.
type docCommand struct {
	line  string // the command, as written
	where string // file:line of its block
}

// readmeCommands returns the command lines of the ```sh blocks of the
// README and of the guides in docs/, each once (the first place it is
// written names it: the same line elsewhere is the same command).
func readmeCommands(t *testing.T) []docCommand {
	t.Helper()
	var cmds []docCommand
	seen := map[string]bool{}
	for _, blk := range docBlocks(t, "sh") {
		for _, line := range strings.Split(blk.Text, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") || seen[line] {
				continue
			}
			seen[line] = true
			cmds = append(cmds, docCommand{line: line, where: blk.where})
		}
	}
	return cmds
}

// docBlock is a fenced block of the README or a guide, and where it is.
type docBlock struct {
	mddoc.Block
	where string // file:line
}

// docBlocks are the README's and the guides' fenced blocks of lang, in
// order.
func docBlocks(t *testing.T, lang string) []docBlock {
	t.Helper()
	var out []docBlock
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		for _, blk := range mddoc.Blocks(string(b)) {
			if blk.Lang == lang {
				out = append(out, docBlock{blk, fmt.Sprintf("%s:%d", f, blk.Line)})
			}
		}
	}
	return out
}

// shellWords splits a command line like a shell would for these simple
// commands (double quotes only).
func shellWords(s string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`"[^"]*"|\S+`).FindAllString(s, -1) {
		out = append(out, strings.Trim(m, `"`))
	}
	return out
}

// TestReadmeCommands runs every command of the README and of the guides in
// docs/ as written, with `crosscode-mcp` on PATH being this build, so the
// documents cannot rot. A command the test does not know fails it: add how
// to run it here.
func TestReadmeCommands(t *testing.T) {
	sysdeps.SkipUnderWine(t, "the README's commands run in sh, with go and git, Linux programs, which Wine cannot start")
	path := selfOnPath(t)
	bin, _, _ := strings.Cut(path, string(os.PathListSeparator))
	// The commands run with a fresh HOME; Go keeps its module and build
	// caches, so `go install` builds from them instead of downloading again.
	goEnv, err := exec.Command("go", "env", "GOMODCACHE", "GOCACHE").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	caches := strings.Fields(string(goEnv))
	if len(caches) != 2 {
		t.Fatalf("go env printed %q", goEnv)
	}
	run := func(t *testing.T, dir string, args []string, timeout time.Duration) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if args[0] == "crosscode-mcp" {
			args = append([]string{filepath.Join(bin, "crosscode-mcp")}, args[1:]...)
		}
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+path, "HOME="+t.TempDir(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GOMODCACHE="+caches[0], "GOCACHE="+caches[1])
		cmd.Env = append(cmd.Env, tempEnv(t)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	seen := 0
	db := "" // the README's PostgreSQL URLs stand for one throwaway database
	for _, dc := range readmeCommands(t) {
		line := dc.line
		args := shellWords(line)
		for i := 1; i < len(args); i++ {
			if args[i-1] == "--db" && strings.HasPrefix(args[i], "postgres://") {
				if db == "" {
					db = pgtest.NewDB(t)
				}
				args[i] = db
			}
		}
		t.Run(line, func(t *testing.T) {
			t.Logf("from %s", dc.where)
			seen++
			switch {
			case line == "scripts/test":
				t.Skip("this is the test command itself; CI runs it")
			case envCommand(args, "go", "test"):
				// A benchmark or a regeneration (docs/startup.md): what it
				// names must exist. The environment variables it sets are
				// read by the repository's code, the benchmarks it selects
				// are there (go test -list); it is not run (BENCHMARKS.md
				// holds the figures, and a regeneration rewrites files).
				env, rest := splitEnv(args)
				pkg := rest[2]
				for _, kv := range env {
					name, _, _ := strings.Cut(kv, "=")
					if !grepFound(filepath.Join("..", ".."), name) {
						t.Fatalf("%s: no code of the repository reads %s", line, name)
					}
				}
				for i := 3; i+1 < len(rest); i++ {
					if rest[i] != "-bench" {
						continue
					}
					pattern := strings.Trim(rest[i+1], "'")
					out, err := run(t, filepath.Join("..", ".."), []string{"go", "test", "-list", pattern, pkg}, 5*time.Minute)
					if err != nil || !strings.Contains(out, "Benchmark") {
						t.Fatalf("%s: go test -list %s %s lists no benchmark: %v\n%s", line, pattern, pkg, err, out)
					}
				}
			case len(args) > 1 && strings.HasPrefix(args[0], "GODEBUG="):
				// A look at the binary's start (docs/startup.md), run as
				// written through sh, with crosscode-mcp on PATH.
				if strings.Contains(line, "valgrind") {
					if _, err := exec.LookPath("valgrind"); err != nil {
						t.Skip("valgrind is not installed")
					}
				}
				dir := t.TempDir()
				if out, err := run(t, dir, []string{"sh", "-c", line}, 3*time.Minute); err != nil || strings.TrimSpace(out) == "" {
					t.Fatalf("%v\n%s", err, out)
				}
			case strings.HasPrefix(line, "scripts/"):
				// A project script: it must exist and be executable.
				fi, err := os.Stat(filepath.Join("..", "..", args[0]))
				if err != nil || fi.Mode()&0o111 == 0 {
					t.Fatalf("%s is not an executable script of the project (%v)", args[0], err)
				}
			case line == "go install ./cmd/crosscode-mcp":
				// The build uses this machine's module and build caches
				// (run's HOME is a temp dir, which would start both anew).
				caches, err := exec.Command("go", "env", "GOMODCACHE", "GOCACHE").Output()
				if err != nil {
					t.Fatal(err)
				}
				dirs := strings.Fields(string(caches))
				if len(dirs) == 2 {
					t.Setenv("GOMODCACHE", dirs[0])
					t.Setenv("GOCACHE", dirs[1])
				}
				if out, err := run(t, filepath.Join("..", ".."), []string{"go", "build", "-o", filepath.Join(t.TempDir(), "crosscode-mcp"), "./cmd/crosscode-mcp"}, 2*time.Minute); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
			case len(args) > 1 && args[0] == "crosscode-mcp" && args[1] == "test":
				// A run of saved plays: from the repository's root when it
				// names an example's capture config (its data in a temp
				// dir, not this clone's git directory), else in a
				// repository whose saved play is the demo game's
				// (examples/demo-arena's), as a user's would be.
				dir, env := playsRepo(t), []string(nil)
				if slices.Contains(args, "--capture-config") {
					dir, env = filepath.Join("..", ".."), []string{"CROSSCODE_DATA=" + t.TempDir()}
				}
				cmd := exec.Command("sh", "-c", line) // as written, quotes and all
				cmd.Dir = dir
				cmd.Env = append(append(os.Environ(), "PATH="+path, "HOME="+t.TempDir(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"), env...)
				cmd.Env = append(cmd.Env, tempEnv(t)...)
				out, err := cmd.CombinedOutput()
				if err != nil || !strings.Contains(string(out), " passed, 0 failed\n") {
					t.Fatalf("%v\n%s", err, out)
				}
			case strings.Contains(line, "examples/phaser-arena"):
				// The web example's commands run from the repository's root.
				if out, err := run(t, filepath.Join("..", ".."), args, 5*time.Minute); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
			case args[0] == "claude" || args[0] == "codex" || args[0] == "gemini":
				// The clients' own tests run them (internal/testing/agentclients):
				// check that what it would start is the server, directly or
				// through npx, and that its flags parse. Gemini CLI takes
				// the command after the server's name, with no "--".
				sep := " -- "
				if args[0] == "gemini" {
					sep = " crosscode "
				}
				_, started, ok := strings.Cut(line, sep)
				started = strings.TrimPrefix(started, "cmd /c ")
				rest, viaNpx := strings.CutPrefix(started, "npx -y crosscode-mcp")
				rest, direct := strings.CutPrefix(rest, "crosscode-mcp")
				if !ok || !(viaNpx || direct) {
					t.Fatalf("unexpected %s command %q", args[0], line)
				}
				fs := flag.NewFlagSet("x", flag.ContinueOnError)
				fs.SetOutput(io.Discard)
				serverFlags(fs)
				if err := fs.Parse(shellWords(rest)); err != nil {
					t.Fatalf("the server would refuse its flags: %v", err)
				}
			case args[0] == "npx":
				// npx -y crosscode-mcp ARGS runs the binary with ARGS
				// (internal/testing/npmtest tests the launcher from its packages).
				if len(args) < 3 || args[1] != "-y" || args[2] != "crosscode-mcp" {
					t.Fatalf("unexpected npx command %q", line)
				}
				if out, err := run(t, gitRepo(t), append([]string{"crosscode-mcp"}, args[3:]...), 90*time.Second); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
			case strings.HasPrefix(line, "go install ") && strings.HasSuffix(line, "@latest"):
				// Installing a published version needs the module proxy:
				// check that the path is this module's command.
				mod, _ := os.ReadFile(filepath.Join("..", "..", "go.mod"))
				first, _, _ := strings.Cut(string(mod), "\n")
				pkg := strings.TrimSuffix(args[2], "@latest")
				modPath := strings.TrimPrefix(first, "module ")
				if rel, ok := strings.CutPrefix(pkg, modPath+"/"); !ok || !fileExists(filepath.Join("..", "..", rel, "main.go")) {
					t.Fatalf("%s is not a command of module %s", pkg, modPath)
				}
			case len(args) > 2 && args[0] == "crosscode-mcp" && args[1] == "godot" && args[2] == "install-addon":
				// Installing the Godot addon (the binary carries it), in a
				// copy of the example without its addon: it lands where the
				// example's project.godot loads it from, and again is a no-op.
				root, err := filepath.Abs(filepath.Join("..", ".."))
				if err != nil {
					t.Fatal(err)
				}
				dir := t.TempDir()
				example := filepath.Join(dir, "examples", "godot-arena")
				os.MkdirAll(filepath.Dir(example), 0o755)
				if out, err := exec.Command("cp", "-r", filepath.Join(root, "examples", "godot-arena"), filepath.Dir(example)).CombinedOutput(); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				os.RemoveAll(filepath.Join(example, "addons")) // a copy installed by hand
				if out, err := run(t, dir, args, time.Minute); err != nil || !strings.Contains(out, "wrote the Cappy addon") {
					t.Fatalf("%v\n%s", err, out)
				}
				project, err := os.ReadFile(filepath.Join(example, "project.godot"))
				m := regexp.MustCompile(`"\*res://(addons/cappy/[a-z_]+\.gd)"`).FindSubmatch(project)
				if err != nil || m == nil {
					t.Fatalf("the example's project.godot loads no Cappy autoload (%v)", err)
				}
				if !fileExists(filepath.Join(example, filepath.FromSlash(string(m[1])))) {
					t.Fatalf("after %q, the example has no %s", line, m[1])
				}
				if out, err := run(t, dir, args, time.Minute); err != nil || !strings.Contains(out, "already") {
					t.Fatalf("again: %v\n%s", err, out)
				}
			case line == "examples/csharp-arena/build.sh":
				// The C# example's build with Mono's mcs, as written, from
				// the root of a copy of the example and the core it builds.
				m := sysdeps.NeedMono(t)
				root := t.TempDir()
				dir := m.CopyArena(t, root)
				if out, err := run(t, root, args, 3*time.Minute); err != nil || !fileExists(filepath.Join(dir, "bin", "arena.exe")) {
					t.Fatalf("%v\n%s", err, out)
				}
			case args[0] == "crosscode-mcp" && strings.Contains(line, "examples/csharp-arena"):
				// The C# example, built, in a repository, with its config.
				a := csharpArena(t, "readme", nil, args[1:]...)
				if sc := a.call("list_scenarios", nil); sc["game"] != "csharp-arena" {
					t.Fatalf("list_scenarios: %v", sc)
				}
			case args[0] != "crosscode-mcp":
				t.Fatalf("%s runs %q: teach this test how to run it", dc.where, line)
			case args[1] == "serve":
				dir := t.TempDir()
				cmd := exec.Command(filepath.Join(bin, "crosscode-mcp"), args[1:]...)
				cmd.Dir, cmd.Env = dir, append(append(os.Environ(), "PATH="+path), tempEnv(t)...)
				stdout, _ := cmd.StdoutPipe()
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				defer func() { cmd.Process.Kill(); cmd.Wait() }()
				first, err := bufio.NewReader(stdout).ReadString('\n')
				if err != nil || !strings.HasPrefix(first, "listening on http://127.0.0.1:") {
					t.Fatalf("serve printed %q (%v)", first, err)
				}
			case args[0] == "crosscode-mcp" && strings.Contains(line, "examples/godot-arena"):
				// The Godot example, from the repository, with `godot` on
				// PATH being the launcher into the Debian unstable tree.
				_, repo, _, godotPath := godotArena(t)
				a := startAgent(t, "readme", agentOpts{clientName: "claude-code", dir: repo, args: args[1:], env: []string{godotPath}})
				if sc := launchGodot(t, a); sc["game"] != "godot-arena" {
					t.Fatalf("list_scenarios: %v", sc)
				}
			case args[1] == "dashboard":
				// It prints one URL with a one-time secret, which opens it.
				url, base, _ := startDashboard(t, gitRepo(t), args[2:]...)
				jar, _ := cookiejar.New(nil)
				c := &http.Client{Jar: jar, Timeout: 20 * time.Second}
				res, err := c.Get(url)
				if err != nil {
					t.Fatal(err)
				}
				page, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK || res.Request.URL.String() != base+"/" || !strings.Contains(string(page), "crosscode-mcp dashboard") {
					t.Fatalf("opening %s: %d at %s", url, res.StatusCode, res.Request.URL)
				}
			case len(args) > 1 && strings.HasPrefix(args[1], "--"):
				// The stdio server itself: it must start and answer over MCP.
				repo := gitRepo(t)
				a := startAgent(t, "readme", agentOpts{clientName: "claude-code", dir: repo, args: args[1:], env: []string{"PATH=" + path}})
				if sc := a.call("list_scenarios", nil); sc["game"] != "demo-arena" {
					t.Fatalf("list_scenarios: %v", sc)
				}
			default:
				dir := gitRepo(t)
				out, err := run(t, dir, args, 90*time.Second)
				if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
			}
		})
	}
	if seen < 20 && !strings.Contains(strings.Join(os.Args, " "), "-test.run") {
		t.Fatalf("found %d commands in the README and docs/; the extraction is broken", seen)
	}
}

// envCommand reports whether args, after VAR=value words, start with cmd.
func envCommand(args []string, cmd ...string) bool {
	_, rest := splitEnv(args)
	if len(rest) < len(cmd) {
		return false
	}
	return slices.Equal(rest[:len(cmd)], cmd)
}

// splitEnv splits leading VAR=value words off a command line.
func splitEnv(args []string) (env, rest []string) {
	i := 0
	for i < len(args) && regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`).MatchString(args[i]) {
		i++
	}
	return args[:i], args[i:]
}

// grepFound reports whether a Go file under dir mentions s.
func grepFound(dir, s string) bool {
	found := false
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || found || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), s) {
			found = true
		}
		return nil
	})
	return found
}

// playsRepo is a repository with the demo game as its game and the demo
// game's saved play (examples/demo-arena's .crosscode), for the documents'
// `crosscode-mcp test` commands.
func playsRepo(t *testing.T) string {
	t.Helper()
	repo := gitRepo(t)
	copyDir(t, filepath.Join("..", "..", "examples", "demo-arena", ".crosscode"), filepath.Join(repo, ".crosscode"))
	return repo
}
