package fuzz_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The package's own files are layers too, bottom to top. A file may use
// what the files of its own layer and of the layers below declare —
// types, functions, methods, fields, constants — and nothing of a layer
// above: the API a user writes against knows nothing of how a case runs;
// a case knows nothing of what reads it afterwards; and neither knows the
// campaigns that run cases by the thousand. TestFileLayers holds the files
// to it with go/types (every use of a package-level object, method or
// field is an arrow from the file that uses it to the file that declares
// it), and fails on a file that has no layer yet.
var fileLayers = [][]string{
	// The API: what a user writes against.
	{"doc.go", "fuzz.go", "options.go", "selection.go", "locker.go", "clientcloser.go", "recipe.go", "stepdown.go", "names.go"},
	// One case, in its bubble: its data, clients, gate, faults, detectors
	// and story.
	{"harness.go", "case.go", "realclients.go", "sessions.go", "fencing.go", "rows.go", "lockloop.go", "recipemutex.go", "behaviour.go",
		"gate.go", "callorder.go", "replies.go", "poll.go", "background.go", "actions.go", "faults.go", "ops.go", "recipechecks.go", "late.go", "quorum.go", "leash.go", "story.go",
		"statereport.go", "herd.go", "liveness.go", "orphans.go", "probe.go", "leak.go"},
	// Reading a case once it has run: its history checked, its finding
	// explained.
	{"history.go", "explain.go", "model.go"},
	// Campaigns: cases by the thousand, from a test, a program or on a
	// real ensemble.
	{"engine.go", "campaign.go", "shim.go", "program.go", "real.go", "check.go"},
}

func TestFileLayers(t *testing.T) {
	layer := map[string]int{}
	for i, files := range fileLayers {
		for _, f := range files {
			layer[f] = i
		}
	}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, f := range pkgs["fuzz"].Files {
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return fset.File(files[i].Pos()).Name() < fset.File(files[j].Pos()).Name() })
	seen := map[string]bool{}
	for _, f := range files {
		name := filepath.Base(fset.File(f.Pos()).Name())
		seen[name] = true
		if _, ok := layer[name]; !ok {
			t.Errorf("%s has no layer in fileLayers: say which it belongs to", name)
		}
	}
	for name := range layer {
		if !seen[name] {
			t.Errorf("fileLayers names %s, which is gone", name)
		}
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: exportImporter(t, fset)}
	pkg, err := conf.Check("github.com/zksim/zksim/fuzz", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	arrows := map[string][]string{}
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !obj.Pos().IsValid() {
			continue
		}
		if v, ok := obj.(*types.Var); ok && !v.IsField() && obj.Parent() != pkg.Scope() {
			continue // a local variable
		}
		if _, ok := obj.(*types.Func); !ok && obj.Parent() != pkg.Scope() && !isField(obj) {
			continue // a local constant or type
		}
		from, to := filepath.Base(fset.Position(id.Pos()).Filename), filepath.Base(fset.Position(obj.Pos()).Filename)
		if layer[from] < layer[to] {
			arrow := fmt.Sprintf("%s → %s", from, to)
			if !slices.Contains(arrows[arrow], obj.Name()) {
				arrows[arrow] = append(arrows[arrow], obj.Name())
			}
		}
	}
	for _, arrow := range slices.Sorted(func(yield func(string) bool) {
		for a := range arrows {
			if !yield(a) {
				return
			}
		}
	}) {
		t.Errorf("%s runs back up the layers: %s", arrow, strings.Join(arrows[arrow], ", "))
	}
}

func isField(obj types.Object) bool {
	v, ok := obj.(*types.Var)
	return ok && v.IsField()
}

// exportImporter imports the package's dependencies from the export data
// the go command keeps for them (go list -export), which is far quicker
// than type-checking them from source.
func exportImporter(t *testing.T, fset *token.FileSet) types.Importer {
	out, err := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Export", ".").Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	export := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		export[p.ImportPath] = p.Export
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := export[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
}

// maxFileLines is the most lines a non-test file of the harness (package
// fuzz and the packages under it) may have: a file a reader can hold.
const maxFileLines = 600

func TestFileLengths(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir // no source: fail files, and the README test's scratch packages
		}
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := strings.Count(string(data), "\n"); n > maxFileLines {
			t.Errorf("%s has %d lines, more than %d: split it by responsibility", path, n, maxFileLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
