package zktest

import (
	"sort"
	"strings"
	"testing"
)

// Scenario is one named conformance check. Body receives a fresh Env and
// fails t when the target differs from ZooKeeper 3.8.
type Scenario struct {
	// Name is unique and slash-separated by area, e.g. "tree/root".
	Name string
	// Doc says in one line what the scenario checks (the suite's are
	// listed in the package documentation).
	Doc  string
	Body func(t *testing.T, env Env)
}

// Scenarios returns every scenario of the suite, sorted by name. The slice
// is a fresh copy; callers may filter it.
func Scenarios() []Scenario {
	var all []Scenario
	for _, group := range [][]Scenario{
		treeScenarios,
		systemScenarios,
		statScenarios,
		sequenceScenarios,
		memberScenarios,
		errorScenarios,
		multiScenarios,
		aclScenarios,
		watchScenarios,
		sessionScenarios,
		opsScenarios,
		persistentScenarios,
	} {
		all = append(all, group...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all
}

// Run runs every scenario against target, each as its own subtest.
func Run(t *testing.T, target Target) {
	t.Helper()
	RunScenarios(t, target, Scenarios())
}

// RunScenarios runs scenarios — the suite's or your own, written once
// against Env — against target, each as its own subtest named after it.
func RunScenarios(t *testing.T, target Target, scenarios []Scenario) {
	t.Helper()
	for _, s := range scenarios {
		target.Run(t, s.Name, s.Body)
	}
}

// RunNamed runs the scenarios whose name equals one of names or starts with
// one of them followed by "/" (so "watch" runs every watch scenario). It
// fails t if a name matches no scenario, so a typo cannot pass silently.
func RunNamed(t *testing.T, target Target, names ...string) {
	t.Helper()
	all := Scenarios()
	for _, name := range names {
		matched := false
		for _, s := range all {
			if s.Name == name || strings.HasPrefix(s.Name, name+"/") {
				matched = true
				target.Run(t, s.Name, s.Body)
			}
		}
		if !matched {
			t.Errorf("zktest: no scenario named %q", name)
		}
	}
}
