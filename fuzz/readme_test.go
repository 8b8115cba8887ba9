package fuzz_test

// The README is the page users read first; these tests keep it from
// rotting. They live here because package fuzz's tests may see every layer
// of the module, and the README shows them all.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/zksim/zksim/fuzz/targets"
)

// readmeMaxLines bounds the README: a page read in ten minutes. The
// manuals are the packages' documentation.
const readmeMaxLines = 400

// readme returns the module's root and the README's text.
func readme(t *testing.T) (root, text string) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return root, string(b)
}

// fencedBlocks returns the bodies of the README's fenced code blocks whose
// info string is lang.
func fencedBlocks(text, lang string) []string {
	var blocks []string
	var cur []string
	in, want := false, false
	for _, line := range strings.Split(text, "\n") {
		switch {
		case !in && strings.HasPrefix(line, "```"):
			in, want, cur = true, strings.TrimSpace(strings.TrimPrefix(line, "```")) == lang, nil
		case in && strings.TrimSpace(line) == "```":
			if want {
				blocks = append(blocks, strings.Join(cur, "\n")+"\n")
			}
			in = false
		case in:
			cur = append(cur, line)
		}
	}
	return blocks
}

func TestReadmeLength(t *testing.T) {
	_, text := readme(t)
	if n := strings.Count(text, "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move the depth into the package documentation", n, readmeMaxLines)
	}
}

var packageClause = regexp.MustCompile(`(?m)^package (\w+)$`)

// TestReadmeGoBlocksCompile vets every ```go block of the README, each as
// a package of its own inside the module, so that it compiles against the
// module as it is. A block must be a whole file: a package clause, its
// imports and its code, so that a reader can paste it.
func TestReadmeGoBlocksCompile(t *testing.T) {
	root, text := readme(t)
	blocks := fencedBlocks(text, "go")
	if len(blocks) == 0 {
		t.Fatal("README.md has no ```go block; the test would check nothing")
	}
	// Inside the module (so that its packages and go.sum resolve with no
	// network), under testdata (so that ./... never sees a leftover), in
	// a directory of its own (so that runs may overlap). The checkout
	// must be writable, as for rapid's fail files.
	tmp, err := os.MkdirTemp(filepath.Join(root, "fuzz", "testdata"), "readme")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	var pkgs []string
	for i, block := range blocks {
		m := packageClause.FindStringSubmatch(block)
		if m == nil {
			t.Errorf("README.md's ```go block %d is not a whole file (no package clause):\n%s", i+1, block)
			continue
		}
		dir := filepath.Join(tmp, "block"+strconv.Itoa(i+1))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// A block with tests goes in a _test.go file, as a reader would put
		// it; a non-test file beside it names the package for the build.
		name := "readme.go"
		if strings.Contains(block, "*testing.T") {
			name = "readme_test.go"
			pkg := strings.TrimSuffix(m[1], "_test")
			if err := os.WriteFile(filepath.Join(dir, "doc.go"), []byte("package "+pkg+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(block), 0o644); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, "./"+filepath.ToSlash(mustRel(t, root, dir)))
	}
	if len(pkgs) == 0 {
		return
	}
	cmd := exec.Command("go", append([]string{"vet"}, pkgs...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go vet of README.md's ```go blocks (blockN is the Nth): %v\n%s", err, out)
	}
}

func mustRel(t *testing.T, base, path string) string {
	t.Helper()
	rel, err := filepath.Rel(base, path)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

var (
	makeTarget   = regexp.MustCompile(`\bmake ([a-z][a-z0-9-]*)`)
	makefileRule = regexp.MustCompile(`(?m)^([A-Za-z0-9_-]+):([^=]|$)`)
)

// TestReadmeMakeTargets checks that every `make X` the README names is a
// target of the Makefile.
func TestReadmeMakeTargets(t *testing.T) {
	root, text := readme(t)
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range makefileRule.FindAllStringSubmatch(string(mk), -1) {
		targets[m[1]] = true
	}
	seen := map[string]bool{}
	for _, m := range makeTarget.FindAllStringSubmatch(text, -1) {
		if name := m[1]; !seen[name] {
			seen[name] = true
			if !targets[name] {
				t.Errorf("README.md says `make %s`, but the Makefile has no target %s", name, name)
			}
		}
	}
	for _, want := range []string{"fuzz", "test"} {
		if !seen[want] {
			t.Errorf("README.md no longer mentions `make %s`, the command a fresh clone starts with", want)
		}
	}
}

var (
	goRun  = regexp.MustCompile(`go run (\./cmd/[a-z0-9-]+)([^\n#&|;` + "`" + `]*)`)
	goTest = regexp.MustCompile(`go (?:test|vet|build) ((?:\./[A-Za-z0-9_./-]*\s*)+)`)
	goDoc  = regexp.MustCompile(`go doc github\.com/zksim/zksim/([a-z0-9/]+)`)
)

// TestReadmeCommands checks the commands the README shows: every
// `go run ./cmd/NAME` names a command that exists and flags its source
// defines, and every `go test ./pkg` and `go doc` names a package that
// exists.
func TestReadmeCommands(t *testing.T) {
	root, text := readme(t)
	isDir := func(rel string) bool {
		st, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
		return err == nil && st.IsDir()
	}
	runs := goRun.FindAllStringSubmatch(text, -1)
	if len(runs) == 0 {
		t.Error("README.md shows no `go run ./cmd/...`; the pattern may have gone stale")
	}
	for _, m := range runs {
		cmd := m[1]
		if !isDir(cmd) {
			t.Errorf("README.md runs %s, which does not exist", cmd)
			continue
		}
		src := commandSource(t, filepath.Join(root, filepath.FromSlash(cmd)))
		for _, field := range strings.Fields(m[2]) {
			if !strings.HasPrefix(field, "-") {
				continue // a flag's value
			}
			name, _, _ := strings.Cut(strings.TrimLeft(field, "-"), "=")
			if !bytes.Contains(src, []byte(`"`+name+`"`)) {
				t.Errorf("README.md runs %s with -%s, which its source does not define", cmd, name)
			}
		}
	}
	for _, m := range goTest.FindAllStringSubmatch(text, -1) {
		for _, pkg := range strings.Fields(m[1]) {
			pkg = strings.TrimSuffix(strings.TrimSuffix(pkg, "..."), "/")
			if !isDir(pkg) {
				t.Errorf("README.md runs go on %s, which does not exist", pkg)
			}
		}
	}
	for _, m := range goDoc.FindAllStringSubmatch(text, -1) {
		if !isDir(m[1]) {
			t.Errorf("README.md points go doc at %s, which does not exist", m[1])
		}
	}
}

// commandSource returns the non-test Go source of a command's directory.
func commandSource(t *testing.T, dir string) []byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var src []byte
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, b...)
	}
	return src
}

var (
	codeSpan  = regexp.MustCompile("`([^`\\s]+)`")
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	adminPath = regexp.MustCompile(`127\.0\.0\.1:8181(/[A-Za-z0-9/_-]+)`)
)

// TestReadmePaths checks that the files and directories the README names
// — in code spans and links, such as the Python example's
// testdata/kazoo/run_suite.py — exist, and that the admin endpoints the
// served-fake examples call are ones package wire serves.
func TestReadmePaths(t *testing.T) {
	root, text := readme(t)
	tops := []string{"zkfake/", "recipe/", "linearizability/", "fuzz/", "testdata/", "cmd/", ".ci/"}
	var paths []string
	for _, re := range []*regexp.Regexp{codeSpan, mdLink} {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			paths = append(paths, m[1])
		}
	}
	for _, p := range paths {
		p = strings.TrimSuffix(p, "/")
		known := false
		for _, top := range tops {
			known = known || strings.HasPrefix(p, top)
		}
		if !known {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
			t.Errorf("README.md names %s, which does not exist", p)
		}
	}
	admin, err := os.ReadFile(filepath.Join(root, "zkfake", "wire", "admin.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range adminPath.FindAllStringSubmatch(text, -1) {
		for _, seg := range strings.Split(m[1], "/") {
			if seg == "" || strings.HasPrefix(seg, "0x") {
				continue // a session id
			}
			if !bytes.Contains(admin, []byte(seg)) {
				t.Errorf("README.md calls the admin interface at %s, but package wire serves no %q", m[1], seg)
			}
		}
	}
}

// TestReadmeTrackRecord holds the README's track record to the catalogue:
// one row for each known bug, in the catalogue's order, and no other, each
// found in every seed. The numbers are make track-record's to write.
func TestReadmeTrackRecord(t *testing.T) {
	_, text := readme(t)
	begin := strings.Index(text, "<!-- track-record begin")
	end := strings.Index(text, "<!-- track-record end")
	if begin < 0 || end < begin {
		t.Fatal("the README has no track-record markers")
	}
	row := regexp.MustCompile(`(?m)^\| (\S+) \| [^|]+ \| [^|]+ \| (\d+) of (\d+) seeds \|`)
	var names []string
	for _, m := range row.FindAllStringSubmatch(text[begin:end], -1) {
		names = append(names, m[1])
		if m[2] != m[3] {
			t.Errorf("%s is found in %s of %s seeds", m[1], m[2], m[3])
		}
	}
	var want []string
	for _, b := range targets.Catalogue() {
		want = append(want, b.Name)
	}
	if !slices.Equal(names, want) {
		t.Errorf("the track record's rows are %v; the catalogue's bugs are %v: run make track-record", names, want)
	}
}
