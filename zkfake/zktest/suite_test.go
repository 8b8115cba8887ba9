package zktest_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/zksim/zksim/zkfake/zktest"
)

// recordingTarget runs no bodies; it records which scenarios were asked for.
type recordingTarget struct{ names []string }

func (r *recordingTarget) Run(_ *testing.T, name string, _ func(*testing.T, zktest.Env)) {
	r.names = append(r.names, name)
}

func TestScenarioNamesAreUniqueAndDocumented(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range zktest.Scenarios() {
		if seen[s.Name] {
			t.Errorf("scenario %q defined twice", s.Name)
		}
		seen[s.Name] = true
		if s.Doc == "" || s.Body == nil {
			t.Errorf("scenario %q lacks a Doc or a Body", s.Name)
		}
		if line := fmt.Sprintf("//   - %s: %s\n", s.Name, s.Doc); !strings.Contains(string(doc), line) {
			t.Errorf("doc.go does not list %q as %q", s.Name, line)
		}
	}
}

func TestRunNamedSelectsByNameAndArea(t *testing.T) {
	var all []string
	for _, s := range zktest.Scenarios() {
		all = append(all, s.Name)
	}
	var multi []string
	for _, name := range all {
		if strings.HasPrefix(name, "multi/") {
			multi = append(multi, name)
		}
	}
	rec := &recordingTarget{}
	zktest.RunNamed(t, rec, "multi", "tree/root")
	want := append(multi, "tree/root")
	if fmt.Sprint(rec.names) != fmt.Sprint(want) {
		t.Fatalf("RunNamed ran %v; want %v", rec.names, want)
	}
	rec = &recordingTarget{}
	zktest.Run(t, rec)
	if fmt.Sprint(rec.names) != fmt.Sprint(all) {
		t.Fatalf("Run ran %v; want every scenario %v", rec.names, all)
	}
}

func ExampleScenarios() {
	for _, s := range zktest.Scenarios() {
		if strings.HasPrefix(s.Name, "multi/") {
			fmt.Println(s.Name)
		}
	}
	// Output:
	// multi/empty
	// multi/failure
	// multi/first-op-fails
	// multi/sees-own-ops
	// multi/success
	// multi/unknown-op
}

// An implementation proves itself by running the suite from its own tests;
// newTarget stands for its zktest.Target (see zkfake/zktest/fake and zkfake/zktest/ensemble).
func ExampleRun() {
	var newTarget func(t *testing.T) zktest.Target
	conformance := func(t *testing.T) {
		zktest.Run(t, newTarget(t))
	}
	_ = conformance
}

func ExampleRunNamed() {
	var target zktest.Target
	watchesOnly := func(t *testing.T) {
		zktest.RunNamed(t, target, "watch", "multi/failure")
	}
	_ = watchesOnly
}
