package targets_test

import (
	"fmt"
	"testing"

	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/fuzz/targets"
)

// A test of the project's leader election: any Elector will do, made on
// the zktest.Conn each simulated client passes it.
func ExampleElection() {
	testElection := func(t *testing.T) {
		fuzz.Check(t, targets.Election(targets.RecipeElection), fuzz.WithClients(3))
	}
	_ = testElection // func TestElection(t *testing.T) { testElection(t) }
}

// The built-in broken recipes, and what finds each.
func ExampleMutants() {
	for _, m := range targets.Mutants() {
		fmt.Printf("%s: %s\n", m.Name, m.Detector)
	}
	// Output:
	// herd: herd
	// wrong-watch: liveness
	// no-relist: mutual-exclusion
	// whole-name-order: mutual-exclusion
	// check-then-create: liveness
	// timed-wait: mutual-exclusion
	// wrong-unlock: mutual-exclusion
	// plain-retry: liveness
	// spin: polling
	// reenter-failed-unlock: mutual-exclusion
	// sequence-wrap: mutual-exclusion
	// closed-retry: liveness
	// forget-guid: liveness
	// reaper-gives-up: liveness
	// unlock-trusts-no-node: mutual-exclusion
	// listing-order: mutual-exclusion
	// election-herd: herd
	// election-exists: model
	// election-split-brain: state-report
	// election-leads-until-expired: state-report
	// election-stale-observer: convergence
	// rw-reader-waits-all: liveness
	// rw-writer-ignores-readers: model
	// rw-readers-watch-first-writer: herd
	// sem-count-then-create: model
	// sem-watch-directory: herd
}
