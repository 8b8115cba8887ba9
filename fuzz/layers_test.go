package fuzz_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The module's packages are layers (the package documentation, "The
// module's layers"): each may import the packages of the module listed
// for it here and no other, directly or not, and the packages a program links to serve ZooKeeper or to lock
// (zkfake, zkfake/wire and its codec zkfake/jute, recipe, linearizability
// and the server command) link no test machinery. TestLayers holds the tree to it, and fails on a
// package that has no rule yet, so that a new one is placed on purpose.
// It lives here because the harness is the top layer, the one package
// that sees all the others.
var layers = map[string]struct {
	may       []string // the module's packages it may depend on
	noTesting bool     // it must not link package testing
}{
	"zkfake":                  {noTesting: true},
	"recipe":                  {noTesting: true},
	"linearizability":         {noTesting: true},
	"zkfake/jute":             {noTesting: true},
	"zkfake/wire":             {may: []string{"zkfake", "zkfake/jute"}, noTesting: true},
	"zkfake/zktest":           {may: []string{"zkfake/jute"}},
	"zkfake/zktest/fake":      {may: []string{"zkfake", "zkfake/zktest", "zkfake/jute"}},
	"zkfake/zktest/ensemble":  {may: []string{"zkfake/zktest", "zkfake/jute"}},
	"zkfake/difftest":         {may: []string{"zkfake", "zkfake/zktest", "zkfake/zktest/ensemble", "zkfake/jute"}},
	"linearizability/fakelog": {may: []string{"linearizability", "zkfake", "zkfake/zktest", "zkfake/jute"}},
	"zkfake/zkbench":          {may: []string{"zkfake", "zkfake/zktest", "zkfake/zktest/ensemble", "zkfake/jute", "recipe"}},
	"fuzz":                    {may: []string{"zkfake", "zkfake/wire", "zkfake/zktest", "zkfake/zktest/ensemble", "zkfake/jute", "recipe", "linearizability"}},
	"fuzz/targets":            {may: []string{"fuzz", "zkfake", "zkfake/wire", "zkfake/zktest", "zkfake/zktest/ensemble", "zkfake/jute", "recipe", "linearizability"}},
	"fuzz/internal/pinned":    {},
	"cmd/zkfake-server":       {may: []string{"zkfake", "zkfake/wire", "zkfake/jute"}, noTesting: true},
	"cmd/zkfuzz":              {may: []string{"fuzz", "fuzz/targets", "zkfake", "zkfake/wire", "zkfake/zktest", "zkfake/zktest/ensemble", "zkfake/jute", "recipe", "linearizability"}},
	"cmd/zkbench":             {may: []string{"fuzz", "fuzz/targets", "zkfake", "zkfake/wire", "zkfake/zktest", "zkfake/zktest/ensemble", "zkfake/jute", "recipe", "linearizability"}},
	"cmd/zkrecord":            {may: []string{"zkfake/difftest", "zkfake", "zkfake/zktest", "zkfake/zktest/ensemble", "zkfake/jute"}},
	"cmd/covfigure":           {},
}

const module = "github.com/zksim/zksim/"

func TestLayers(t *testing.T) {
	// go list reports what a package links, tests left out: what a
	// program that imports it gets.
	out, err := exec.Command("go", "list", "-json=ImportPath,Deps", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := 0
	for {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(p.ImportPath, module)
		rule, ok := layers[name]
		if !ok {
			t.Errorf("%s has no rule in layers: say which of the module's packages it may import", name)
			continue
		}
		seen++
		for _, dep := range p.Deps {
			switch {
			case strings.HasPrefix(dep, module):
				if d := strings.TrimPrefix(dep, module); !slices.Contains(rule.may, d) {
					t.Errorf("%s depends on %s, which its layer may not import", name, d)
				}
			case rule.noTesting && (dep == "testing" || strings.HasPrefix(dep, "testing/")):
				t.Errorf("%s links %s: test machinery in a package programs import", name, dep)
			}
		}
	}
	if seen != len(layers) {
		t.Errorf("go list showed %d of the %d packages that have a rule: remove the rules of packages that are gone", seen, len(layers))
	}
}
