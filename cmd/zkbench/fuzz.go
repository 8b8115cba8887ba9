package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/fuzz/targets"
	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

// fuzzWorkload is the table's name for the timed fuzz campaign.
const fuzzWorkload = "FuzzCase"

// fuzzSeed fixes the campaign, so that every run times the same cases (on
// the fake; a real ensemble's cases depend on real timing too).
const fuzzSeed = 1

// fuzzShrinkTime bounds shrinking if the campaign finds something: the
// command times cases, it does not hunt bugs (zkfuzz does).
const fuzzShrinkTime = 5 * time.Second

// The size of the timed cases, set explicitly (they are also the
// harness's defaults) so that the table can say what it timed.
const (
	fuzzClients = 5
	fuzzSteps   = 80
)

// timeFuzz runs a campaign of cases cases of the fuzz harness against
// recipe.Mutex and times it: on the fake when servers is empty, otherwise
// on the ensemble at servers (the harness's real-ensemble mode, chosen by
// fuzz.OnEnsemble). fuzz.Run needs a program of its own (it runs the
// testing package inside this process), which is why the command times it
// rather than a benchmark. It returns the campaign's cell of the table, the
// command that describes it, and a note if the campaign found a violation:
// that does not stop the table, but it is news.
func timeFuzz(ctx context.Context, cases, workers int, servers string, progress io.Writer) (s *side, command, note string, err error) {
	target := "the fake"
	var members []string
	if servers != "" {
		target = "the ensemble"
		if members, err = ensemble.ParseServers(servers); err != nil {
			return nil, "", "", err
		}
	}
	htmlDir, err := os.MkdirTemp("", "zkbench-fuzz-")
	if err != nil {
		return nil, "", "", err
	}
	opts := []fuzz.Option{
		fuzz.WithName("zkbench"),
		fuzz.WithCases(cases),
		fuzz.WithSeed(fuzzSeed),
		fuzz.WithClients(fuzzClients),
		fuzz.WithSteps(fuzzSteps),
		fuzz.WithHTMLDir(htmlDir),
		fuzz.WithoutFailFile(),
		fuzz.WithShrinkTime(fuzzShrinkTime),
		fuzz.WithOutput(io.Discard),
		fuzz.OnEnsemble(members...),
		fuzz.WithWorkers(workers),
	}
	on := fmt.Sprintf(", fuzz.WithWorkers(%d)", workers)
	if servers != "" {
		on = fmt.Sprintf(", fuzz.OnEnsemble(%q...)", members)
	}
	command = fmt.Sprintf("fuzz.Run(ctx, fuzz.Lock(fuzz.RecipeMutex), fuzz.WithCases(%d), fuzz.WithSeed(%d), fuzz.WithClients(%d), fuzz.WithSteps(%d)%s)", cases, fuzzSeed, fuzzClients, fuzzSteps, on)
	fmt.Fprintf(progress, "zkbench: timing %d fuzz cases of recipe.Mutex on %s (%d workers)\n", cases, target, workers)

	rep, err := fuzz.Run(ctx, fuzz.Lock(fuzz.RecipeMutex), opts...)
	if err != nil || len(rep.Findings) == 0 {
		os.RemoveAll(htmlDir)
	}
	if err != nil {
		return nil, command, "", err
	}
	if rep.Runs == 0 || rep.Elapsed <= 0 {
		return nil, command, "", fmt.Errorf("the campaign on %s ran no cases", target)
	}
	runs := float64(rep.Runs)
	s = &side{runs: 1, values: map[string]float64{
		"ns/op":      float64(rep.Elapsed.Nanoseconds()) / runs,
		"cases/s":    runs / rep.Elapsed.Seconds(),
		"steps/case": float64(rep.Steps) / runs,
	}}
	if len(rep.Findings) > 0 {
		f := rep.Findings[0]
		note = fmt.Sprintf("The fuzz campaign on %s found a violation in case %d, so its rate includes what came after (shrinking, on the fake): %s.", target, rep.Cases, f.Summary)
		if f.HTML != "" {
			note += " History: " + f.HTML + "."
		}
	}
	return s, command, note, nil
}

// mutantWorkload is the table's name for the time to find a mutant:
// "FindMutant/<name>".
const mutantWorkload = "FindMutant"

// mutantBudget is how many cases a campaign against a mutant may take.
const mutantBudget = 3000

// findMutants runs a campaign against each built-in mutant with seeds 1 to
// seeds, on the fake, and returns a row for each: the median and the most
// cases to the first finding (whichever detector finds it), and the median
// wall time to it, shrinking left out (a shrink of 1ms). These are the
// counts of the fuzz package documentation's mutant tables, made by the
// command over fewer seeds.
func findMutants(ctx context.Context, seeds int, progress io.Writer) (rows []row, command string, notes []string) {
	command = fmt.Sprintf("for each m in targets.Mutants(), seed in 1..%d: fuzz.Run(ctx, m.Target, fuzz.WithCases(%d), fuzz.WithSeed(seed), fuzz.WithShrinkTime(time.Millisecond), fuzz.WithoutFailFile(), m.Options...)", seeds, mutantBudget)
	for _, m := range targets.Mutants() {
		var cases []int
		var secs []float64
		for seed := 1; seed <= seeds && ctx.Err() == nil; seed++ {
			opts := append([]fuzz.Option{fuzz.WithName("zkbench-" + m.Name), fuzz.WithCases(mutantBudget), fuzz.WithSeed(uint64(seed)),
				fuzz.WithShrinkTime(time.Millisecond), fuzz.WithoutFailFile(), fuzz.WithOutput(io.Discard)}, m.Options...)
			fmt.Fprintf(progress, "zkbench: finding %s, seed %d\n", m.Name, seed)
			start := time.Now()
			rep, err := fuzz.Run(ctx, m.Target, opts...)
			took := time.Since(start)
			switch {
			case err != nil:
				notes = append(notes, fmt.Sprintf("The campaign against %s (seed %d) failed: %v", m.Name, seed, err))
				continue
			case len(rep.Findings) == 0:
				notes = append(notes, fmt.Sprintf("%s was not found in %d cases with seed %d.", m.Name, mutantBudget, seed))
				continue
			}
			cases = append(cases, rep.Cases)
			// The wall time to the finding: the campaign's share of
			// cases up to it (shrinking, a millisecond, aside).
			secs = append(secs, took.Seconds()*float64(rep.Cases)/float64(max(rep.Runs, 1)))
		}
		if len(cases) == 0 {
			continue
		}
		slices.Sort(cases)
		slices.Sort(secs)
		rows = append(rows, row{workload: mutantWorkload + "/" + m.Name, fake: &side{runs: 1, values: map[string]float64{
			"cases (median)": medianOf(cases),
			"cases (max)":    float64(cases[len(cases)-1]),
			"s (median)":     medianOf(secs),
		}}})
	}
	return rows, command, notes
}

// medianOf is the median of sorted values.
func medianOf[T int | float64](sorted []T) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return float64(sorted[n/2])
	}
	return float64(sorted[n/2-1]+sorted[n/2]) / 2
}
