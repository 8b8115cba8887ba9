package fuzz_test

import (
	"context"
	"fmt"
	"log"
	"testing"

	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// The built-in broken recipes, and what finds each.
func ExampleMutants() {
	for _, m := range fuzz.Mutants() {
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
	// spin: herd
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

// A test of a lock of your own: any type with Lock(ctx) and Unlock(), made
// on the zktest.Conn each simulated client passes it. On a finding the test
// fails with the shrunk story, and rapid saves a fail file under
// testdata/rapid that every later `go test` replays first.
func ExampleCheckMutex() {
	testMyLock := func(t *testing.T) {
		fuzz.CheckMutex(t, func(conn zktest.Conn, path string) fuzz.Locker {
			return recipe.NewMutex(conn, path, recipe.WithNodeName("lock-"))
		}, fuzz.WithClients(3))
	}
	_ = testMyLock // func TestMyLock(t *testing.T) { testMyLock(t) }
}

// A campaign from a program, as cmd/zkfuzz runs it.
func ExampleRun() {
	report, err := fuzz.Run(context.Background(), fuzz.Lock(fuzz.RecipeMutex), fuzz.Config{Cases: 500, Seed: 7})
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range report.Findings {
		fmt.Println(f)
	}
	fmt.Printf("%d cases, %d findings\n", report.Cases, len(report.Findings))
}
