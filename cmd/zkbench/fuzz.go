package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/zksim/zksim/fuzz"
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
// fuzz.Config.Servers). fuzz.Run needs a program of its own (it runs the
// testing package inside this process), which is why the command times it
// rather than a benchmark. It returns the campaign's cell of the table, the
// command that describes it, and a note if the campaign found a violation:
// that does not stop the table, but it is news.
func timeFuzz(ctx context.Context, cases int, servers string, progress io.Writer) (s *side, command, note string, err error) {
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
		Servers:    members,
	}
	on := ""
	if servers != "" {
		on = fmt.Sprintf(", Servers: %#v", members)
	}
	command = fmt.Sprintf("fuzz.Run(ctx, fuzz.Lock(fuzz.RecipeMutex), fuzz.Config{Cases: %d, Seed: %d, Clients: %d, Steps: %d%s})", cases, fuzzSeed, fuzzClients, fuzzSteps, on)
	fmt.Fprintf(progress, "zkbench: timing %d fuzz cases of recipe.Mutex on %s\n", cases, target)

	rep, err := fuzz.Run(ctx, fuzz.Lock(fuzz.RecipeMutex), cfg)
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
