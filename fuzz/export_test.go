package fuzz

import (
	"maps"
	"slices"
)

// ExampleTargets are recipes the package's examples describe, by name,
// with the detector that finds their bug: the tests that hold the mutants
// to their budgets and replay their fail files run them too, so that a
// user's recipe is shown to be fuzzed exactly like the package's own.
var ExampleTargets = map[string]Mutant{}

// withExamples returns the mutants, then the examples' recipes.
func withExamples() []Mutant {
	all := Mutants()
	for _, name := range slices.Sorted(maps.Keys(ExampleTargets)) {
		all = append(all, ExampleTargets[name])
	}
	return all
}

// mutantOrExample returns the mutant or the example's recipe called name.
func mutantOrExample(name string) (Mutant, bool) {
	if m, ok := ExampleTargets[name]; ok {
		return m, true
	}
	return MutantByName(name)
}
