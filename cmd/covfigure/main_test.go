package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFigure runs covfigure on a package of its own: an option setter and
// a String method are left out of the second figure, and named.
func TestFigure(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.26\n")
	if err := os.Mkdir(filepath.Join(dir, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("p/p.go", `package p

type Option func(*int)

func WithX(x int) Option {
	return func(p *int) { *p = x }
}

type S int

func (s S) String() string {
	return "s"
}

func Work(a int) int {
	if a > 0 {
		return 1
	}
	return 2
}
`)
	write("cover.out", `mode: set
example.com/m/p/p.go:5.26,6.32 1 0
example.com/m/p/p.go:6.32,6.42 1 0
example.com/m/p/p.go:11.28,13.2 1 0
example.com/m/p/p.go:15.22,16.11 1 1
example.com/m/p/p.go:16.11,18.3 1 1
example.com/m/p/p.go:19.2,19.10 1 0
`)
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	var out strings.Builder
	if err := run(&out, "cover.out", "example.com/m/p"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"33.3% of statements over every function (2 of 6)",
		"66.7% of statements over the functions that matter (2 of 3), leaving out 2:",
		"WithX (option setter, 0/2)",
		"S.String (String, 0/1)",
		"p.go:15\tWork\t2/3",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q:\n%s", want, out.String())
		}
	}
}
