// Command covfigure summarises a Go coverage profile of one package for
// `make fuzz-coverage`: the statements each function has and how many of
// them ran, and the statement coverage over the functions that matter.
//
//	go run ./cmd/covfigure [-pkg import/path] profile
//
// `go tool cover -func` gives each function's percentage, not its
// statement count, so it cannot weigh functions into a total of a chosen
// few. covfigure reads the profile's blocks, puts each in the function
// (of the package's non-test files) that holds it, and prints the total
// over every function and over every function but the ones a campaign
// has no reason to reach: String methods (for people, not for locking)
// and option setters (top-level With... functions returning an ...Option,
// which only store a setting). Both figures are printed, and the
// functions left out are named, so the second figure can be checked.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

func main() {
	pkg := flag.String("pkg", "github.com/zksim/zksim/recipe", "the import path of the package the profile covers")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: covfigure [-pkg import/path] profile\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(os.Stdout, flag.Arg(0), *pkg); err != nil {
		fmt.Fprintf(os.Stderr, "covfigure: %v\n", err)
		os.Exit(1)
	}
}

// block is one block of a coverage profile.
type block struct {
	file               string // the file's base name
	startLine, endLine int
	startCol           int
	stmts              int
	count              int
}

// fn is one function of the package, with its statements.
type fn struct {
	name       string
	file       string
	start      token.Position
	end        token.Position
	excluded   string // why it is left out of the figure, "" if it is not
	stmts, hit int
}

func run(w io.Writer, profile, pkg string) error {
	blocks, err := readProfile(profile, pkg)
	if err != nil {
		return err
	}
	dir, err := packageDir(pkg)
	if err != nil {
		return err
	}
	fns, err := functions(dir)
	if err != nil {
		return err
	}
	for _, b := range blocks {
		for _, f := range fns {
			if f.file == b.file && within(b, f) {
				f.stmts += b.stmts
				if b.count > 0 {
					f.hit += b.stmts
				}
				break
			}
		}
	}
	sort.Slice(fns, func(i, j int) bool {
		if fns[i].file != fns[j].file {
			return fns[i].file < fns[j].file
		}
		return fns[i].start.Line < fns[j].start.Line
	})
	var all, goal [2]int
	var left []string
	for _, f := range fns {
		if f.stmts == 0 {
			continue
		}
		all[0] += f.hit
		all[1] += f.stmts
		if f.excluded != "" {
			left = append(left, fmt.Sprintf("%s (%s, %d/%d)", f.name, f.excluded, f.hit, f.stmts))
			continue
		}
		goal[0] += f.hit
		goal[1] += f.stmts
	}
	fmt.Fprintf(w, "%s: %s of statements over every function (%d of %d)\n", pkg, percent(all), all[0], all[1])
	fmt.Fprintf(w, "%s: %s of statements over the functions that matter (%d of %d), leaving out %d:\n", pkg, percent(goal), goal[0], goal[1], len(left))
	for _, l := range left {
		fmt.Fprintf(w, "\t%s\n", l)
	}
	fmt.Fprintf(w, "functions under 100%%, statements run of statements:\n")
	for _, f := range fns {
		if f.stmts > 0 && f.hit < f.stmts && f.excluded == "" {
			fmt.Fprintf(w, "\t%s:%d\t%s\t%d/%d\n", f.file, f.start.Line, f.name, f.hit, f.stmts)
		}
	}
	return nil
}

func percent(n [2]int) string {
	if n[1] == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n[0])/float64(n[1]))
}

func within(b block, f *fn) bool {
	after := b.startLine > f.start.Line || b.startLine == f.start.Line && b.startCol >= f.start.Column
	before := b.endLine <= f.end.Line
	return after && before
}

// readProfile reads the blocks of pkg's files from a text coverage
// profile; a block listed more than once (several runs merged) counts if
// any run ran it.
func readProfile(path, pkg string) ([]block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seen := map[string]*block{}
	var order []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "mode:") || line == "" {
			continue
		}
		// file:startLine.startCol,endLine.endCol stmts count
		colon := strings.LastIndexByte(line, ':')
		if colon < 0 {
			return nil, fmt.Errorf("malformed line %q", line)
		}
		file, rest := line[:colon], line[colon+1:]
		if filepath.Dir(file) != pkg {
			continue
		}
		var sl, sc2, el, ec, stmts, count int
		if _, err := fmt.Sscanf(rest, "%d.%d,%d.%d %d %d", &sl, &sc2, &el, &ec, &stmts, &count); err != nil {
			return nil, fmt.Errorf("malformed line %q: %v", line, err)
		}
		key := file + ":" + strings.Fields(rest)[0]
		if b, ok := seen[key]; ok {
			b.count = max(b.count, count)
			continue
		}
		seen[key] = &block{file: filepath.Base(file), startLine: sl, startCol: sc2, endLine: el, stmts: stmts, count: count}
		order = append(order, key)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	blocks := make([]block, 0, len(order))
	for _, k := range order {
		blocks = append(blocks, *seen[k])
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("%s has no block of %s", path, pkg)
	}
	return blocks, nil
}

// packageDir finds pkg's directory in the module of the working directory.
func packageDir(pkg string) (string, error) {
	data, err := os.ReadFile("go.mod")
	if err != nil {
		return "", fmt.Errorf("run from the module's root: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if mod, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			mod = strings.TrimSpace(mod)
			if unq, err := strconv.Unquote(mod); err == nil {
				mod = unq
			}
			rel, ok := strings.CutPrefix(pkg, mod)
			if !ok {
				return "", fmt.Errorf("%s is not in module %s", pkg, mod)
			}
			return "." + rel, nil
		}
	}
	return "", fmt.Errorf("go.mod names no module")
}

// functions returns the functions of the package's non-test files, with
// the ones left out of the figure marked.
func functions(dir string) ([]*fn, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var out []*fn
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return nil, err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			d, ok := n.(*ast.FuncDecl)
			if !ok || d.Body == nil {
				return true
			}
			f := &fn{name: funcName(d), file: filepath.Base(path), start: fset.Position(d.Pos()), end: fset.Position(d.End())}
			switch {
			case d.Name.Name == "String" && d.Recv != nil:
				f.excluded = "String"
			case d.Recv == nil && strings.HasPrefix(d.Name.Name, "With") && returnsOption(d):
				f.excluded = "option setter"
			}
			out = append(out, f)
			return false
		})
	}
	return out, nil
}

func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	t := d.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + d.Name.Name
	}
	return d.Name.Name
}

// returnsOption reports whether d returns one value of a type whose name
// ends in Option.
func returnsOption(d *ast.FuncDecl) bool {
	r := d.Type.Results
	if r == nil || len(r.List) != 1 || len(r.List[0].Names) > 1 {
		return false
	}
	id, ok := r.List[0].Type.(*ast.Ident)
	return ok && strings.HasSuffix(id.Name, "Option")
}
