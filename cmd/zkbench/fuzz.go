package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/zksim/zksim/fuzz"
)

// fuzzSeed fixes the campaign, so that every run times the same cases.
const fuzzSeed = 1

// fuzzShrinkTime bounds shrinking if the campaign finds something: the
// command times cases, it does not hunt bugs (zkfuzz does).
const fuzzShrinkTime = 5 * time.Second

// timeFuzz runs a campaign of cases cases of the fuzz harness against
// recipe.Mutex and times it.
// fuzz.Run needs a program of its own (it runs the testing package inside
// this process), which is why the command times it rather than a benchmark.
// A finding is returned as a note: it does not stop the table, but it is
// news.
func timeFuzz(ctx context.Context, cases int, progress io.Writer) (*fuzzResult, string, error) {
	htmlDir, err := os.MkdirTemp("", "zkbench-fuzz-")
	if err != nil {
		return nil, "", err
	}
	cfg := fuzz.Config{
		Name:       "zkbench",
		Cases:      cases,
		Seed:       fuzzSeed,
		Clients:    fuzzClients,
		Steps:      fuzzSteps,
		HTMLDir:    htmlDir,
		NoFailFile: true,
		ShrinkTime: fuzzShrinkTime,
		Output:     io.Discard,
	}
	fmt.Fprintf(progress, "zkbench: timing %d fuzz cases of recipe.Mutex (seed %d)\n", cases, fuzzSeed)
	rep, err := fuzz.Run(ctx, fuzz.RecipeMutex, cfg)
	if err != nil {
		os.RemoveAll(htmlDir)
		return nil, "", err
	}
	res := &fuzzResult{cases: rep.Runs, steps: rep.Steps, elapsed: rep.Elapsed, clients: fuzzClients, maxSteps: fuzzSteps}
	if len(rep.Findings) == 0 {
		os.RemoveAll(htmlDir)
		return res, "", nil
	}
	f := rep.Findings[0]
	note := fmt.Sprintf("The fuzz campaign (seed %d) found a violation in case %d, so its rate includes shrinking: %s.", fuzzSeed, rep.Cases, f.Summary)
	if f.HTML != "" {
		note += " History: " + f.HTML + "."
	}
	return res, note, nil
}

// The size of the timed cases, set explicitly (they are also the
// harness's defaults) so that the table can say what it timed.
const (
	fuzzClients = 5
	fuzzSteps   = 80
)
