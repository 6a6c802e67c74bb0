package unitytest

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// pkgDir is the Unity package, from this folder.
const pkgDir = "../unity"

// hidden reports whether Unity's asset database ignores a file or folder
// name: hidden ones (a leading dot) and those ending with "~" (Samples~).
func hidden(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~")
}

var guidLine = regexp.MustCompile(`(?m)^guid: ([0-9a-f]{32})$`)

// TestPackageLayout checks the package as Unity imports it by its manifest
// rules: package.json's fields; a .meta with a GUID, unique in the package,
// beside every file and folder Unity imports (a git package is immutable,
// so Unity cannot write a missing one, and it ignores an asset without
// one), none left over, and the samples' own (kept when imported); one
// assembly definition in each folder of C#, whose references resolve; the
// core free of UnityEngine; a README that starts with the one step.
func TestPackageLayout(t *testing.T) {
	var manifest struct {
		Name, Version, DisplayName, Description, Unity, License string
		Samples                                                 []struct{ DisplayName, Description, Path string }
	}
	b, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &manifest)
	}
	if err != nil {
		t.Fatalf("package.json: %v", err)
	}
	switch {
	case manifest.Name != "com.crosscode.cappy":
		t.Fatalf("package.json name %q", manifest.Name)
	case !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(manifest.Version):
		t.Fatalf("package.json version %q is not MAJOR.MINOR.PATCH", manifest.Version)
	case manifest.Unity != "2022.3":
		t.Fatalf("package.json unity %q: the package supports 2022.3 LTS and Unity 6", manifest.Unity)
	case manifest.DisplayName == "" || manifest.Description == "" || manifest.License != "Apache-2.0":
		t.Fatalf("package.json lacks displayName, description or the project's license: %+v", manifest)
	case len(manifest.Samples) == 0:
		t.Fatal("package.json lists no samples")
	}
	for _, s := range manifest.Samples {
		if !strings.HasPrefix(s.Path, "Samples~/") || !isDir(filepath.Join(pkgDir, filepath.FromSlash(s.Path))) || s.DisplayName == "" {
			t.Fatalf("sample %+v: its path must be a folder under Samples~", s)
		}
	}

	guids := map[string]string{}
	asmdefs := map[string]string{} // folder -> assembly name
	csFolders := map[string]bool{}
	err = filepath.WalkDir(pkgDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(pkgDir, p)
		rel = filepath.ToSlash(rel)
		name := d.Name()
		if p == pkgDir {
			return nil
		}
		if strings.HasPrefix(name, ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".meta") {
			asset := strings.TrimSuffix(p, ".meta")
			if _, err := os.Stat(asset); err != nil || hidden(filepath.Base(asset)) {
				t.Errorf("%s: a .meta beside no asset Unity imports", rel)
			}
			return nil
		}
		if hidden(name) {
			return nil // Samples~ itself: Unity skips it (its content keeps its .meta files for import)
		}
		meta, err := os.ReadFile(p + ".meta")
		if err != nil {
			t.Errorf("%s has no .meta: Unity ignores it in a git package", rel)
			return nil
		}
		m := guidLine.FindSubmatch(meta)
		if m == nil || !strings.HasPrefix(string(meta), "fileFormatVersion: 2\n") {
			t.Errorf("%s.meta: no fileFormatVersion 2 and guid of 32 lowercase hex digits", rel)
			return nil
		}
		if other, dup := guids[string(m[1])]; dup {
			t.Errorf("%s.meta and %s.meta share the guid %s", rel, other, m[1])
		}
		guids[string(m[1])] = rel
		if d.IsDir() != strings.Contains(string(meta), "folderAsset: yes") {
			t.Errorf("%s.meta: folderAsset does not match", rel)
		}
		switch filepath.Ext(name) {
		case ".cs":
			csFolders[filepath.ToSlash(filepath.Dir(rel))] = true
		case ".asmdef":
			var a struct{ Name string }
			b, _ := os.ReadFile(p)
			if json.Unmarshal(b, &a) != nil || a.Name == "" {
				t.Errorf("%s: not an assembly definition", rel)
			}
			dir := filepath.ToSlash(filepath.Dir(rel))
			if prev, ok := asmdefs[dir]; ok {
				t.Errorf("%s: a second assembly definition in %s (%s)", rel, dir, prev)
			}
			asmdefs[dir] = a.Name
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir := range csFolders {
		if strings.HasPrefix(dir, "Samples~") {
			continue // a sample compiles in the project it is imported into
		}
		if _, ok := asmdefs[dir]; !ok {
			t.Errorf("the C# of %s has no assembly definition beside it", dir)
		}
	}
	for _, want := range []string{"Runtime/Core", "Runtime/Unity", "Editor", "Tests/Core"} {
		if _, ok := asmdefs[want]; !ok {
			t.Errorf("no assembly definition in %s", want)
		}
	}
	if t.Failed() {
		return
	}

	// The assemblies: what each is for, and references that resolve.
	known := map[string]bool{"Unity.InputSystem": true, "UnityEngine.TestRunner": true, "UnityEditor.TestRunner": true}
	for _, name := range asmdefs {
		known[name] = true
	}
	type asmdef struct {
		Name               string   `json:"name"`
		References         []string `json:"references"`
		IncludePlatforms   []string `json:"includePlatforms"`
		ExcludePlatforms   []string `json:"excludePlatforms"`
		NoEngineReferences bool     `json:"noEngineReferences"`
		DefineConstraints  []string `json:"defineConstraints"`
		VersionDefines     []struct {
			Name, Expression, Define string
		} `json:"versionDefines"`
	}
	read := func(dir string) asmdef {
		files, _ := filepath.Glob(filepath.Join(pkgDir, filepath.FromSlash(dir), "*.asmdef"))
		var a asmdef
		b, _ := os.ReadFile(files[0])
		dec := json.NewDecoder(strings.NewReader(string(b)))
		if err := dec.Decode(&a); err != nil {
			t.Fatalf("%s: %v", files[0], err)
		}
		for _, r := range a.References {
			if !known[r] {
				t.Errorf("%s references %s, which is no assembly of the package nor a known Unity one", a.Name, r)
			}
		}
		return a
	}
	core, layer, editor, tests := read("Runtime/Core"), read("Runtime/Unity"), read("Editor"), read("Tests/Core")
	if !core.NoEngineReferences || len(core.References) != 0 || !slices.Contains(core.ExcludePlatforms, "WebGL") {
		t.Errorf("the core must reference no engine and nothing else, and leave WebGL out (no System.Net.WebSockets): %+v", core)
	}
	if !slices.Contains(layer.References, core.Name) || !slices.Contains(layer.References, "Unity.InputSystem") || len(layer.VersionDefines) < 2 {
		t.Errorf("the Unity layer: %+v", layer)
	}
	if !slices.Equal(editor.IncludePlatforms, []string{"Editor"}) || !slices.Equal(tests.IncludePlatforms, []string{"Editor"}) || !slices.Contains(tests.DefineConstraints, "UNITY_INCLUDE_TESTS") {
		t.Errorf("the Editor and Tests assemblies are the Editor's only: %+v %+v", editor, tests)
	}
	files, _ := filepath.Glob(filepath.Join(pkgDir, "Runtime", "Core", "*.cs"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for i, line := range strings.Split(string(b), "\n") {
			code, _, _ := strings.Cut(line, "//")
			if strings.Contains(code, "UnityEngine") || strings.Contains(code, "UnityEditor") {
				t.Errorf("%s:%d names UnityEngine or UnityEditor: the core uses no engine type", f, i+1)
			}
		}
	}

	readme, _ := os.ReadFile(filepath.Join(pkgDir, "README.md"))
	if !strings.Contains(strings.SplitN(string(readme), "\n## ", 2)[0], "The one step") || !strings.Contains(string(readme), "crosscode-mcp.git?path=adapters/unity") {
		t.Error("the package's README does not start with the one step (its git URL)")
	}
	t.Logf("%d assets, each with its own GUID; assemblies %v", len(guids), fmt.Sprint(asmdefs))
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
