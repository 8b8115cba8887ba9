package fuzz

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// ErrInTest is returned by Run inside a test binary: there, call Check
// with the test's own *testing.T.
var ErrInTest = errors.New("fuzz: Run is for programs; a test calls Check")

// Run runs a campaign from a program, as Check does from a test, and
// reports what it found. Its cases run on WithWorkers workers (default
// GOMAXPROCS) and, WithShard, only one shard's slice of them: case k is
// the case rapid.Check would run k-th from the seed, whichever worker
// or shard runs it, and the first failing case by index is the one
// reported and shrunk, so the report is the same with one worker or many.
// When ctx is done Run stops starting cases and returns once those under
// way end (a case takes milliseconds), with the cases run so far in the
// Report.
//
// Cases need a *testing.T: testing/synctest, which gives them virtual time
// and lets the harness decide the interleaving, runs only inside a test.
// So Run runs the campaign as a one-test test suite through the testing
// package's own entry point (testing.MainStart), in this process, and
// reads rapid's settings from opts. While it runs it sets rapid's flags
// and redirects os.Stdout (where the testing package prints) to
// WithOutput's writer; it
// is not safe to call Run concurrently, nor from a test binary, whose own
// testing state it would disturb (there it returns ErrInTest).
func Run(ctx context.Context, target Target, opts ...Option) (Report, error) {
	if testing.Testing() {
		return Report{}, ErrInTest
	}
	cfg := configure(opts)
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64() | 1
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.Shards < 1 || cfg.Shard < 1 || cfg.Shard > cfg.Shards {
		if cfg.Shards > 0 || cfg.Shard > 0 {
			return Report{}, fmt.Errorf("fuzz: shard %d of %d: want 1 <= shard <= shards", cfg.Shard, cfg.Shards)
		}
		cfg.Shard, cfg.Shards = 1, 1
	}
	e := newEngine(target.subject(), cfg)
	if len(cfg.Servers) > 0 && !e.sub.isLock() {
		return Report{}, fmt.Errorf("fuzz: the %s recipe runs on the fake only; a real ensemble runs the lock loop", e.sub.name)
	}
	e.ctx = ctx

	testing.Init() // the testing package's flags, -test.parallel among them
	restore, err := setRapidFlags(cfg)
	if err != nil {
		return Report{}, err
	}
	defer restore()
	if !flag.Parsed() {
		// testing's Run parses the command line unless it was parsed
		// already; the program's own flags are not testing's business.
		if err := flag.CommandLine.Parse(nil); err != nil {
			return Report{}, err
		}
	}

	start := time.Now()
	progress := func() Progress {
		failures := e.failures.Load()
		return Progress{
			Cases:     int(e.runs.Load()),
			Steps:     int(e.steps.Load()),
			Findings:  int(failures),
			Shrinking: failures > 0,
			Elapsed:   time.Since(start),
			Faults:    e.faultCounts(),
		}
	}
	stopProgress := make(chan struct{})
	var progressDone sync.WaitGroup
	if cfg.Progress != nil {
		progressDone.Go(func() {
			tick := time.NewTicker(250 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-tick.C:
					cfg.Progress(progress())
				case <-stopProgress:
					return
				}
			}
		})
	}

	output, err := captureStdout(cfg.Output)
	if err != nil {
		close(stopProgress)
		return Report{}, err
	}
	var res campaignResult
	m := testing.MainStart(programDeps{}, []testing.InternalTest{{
		Name: cfg.Name,
		F: func(t *testing.T) {
			if len(cfg.Servers) > 0 {
				e.realCampaign(t, cfg.Cases, cfg.Seed)
				return
			}
			e.campaign(t, &res)
		},
	}}, nil, nil, nil)
	m.Run()
	printed := output()

	close(stopProgress)
	progressDone.Wait()
	if cfg.Progress != nil {
		cfg.Progress(progress())
	}

	report := Report{
		Name:    cfg.Name,
		Seed:    cfg.Seed,
		Runs:    int(e.runs.Load()),
		Steps:   int(e.steps.Load()),
		Elapsed: time.Since(start),
		Stopped: ctx.Err() != nil,
		Faults:  e.faultCounts(),
	}
	report.Tokenless = e.tokenlessNote()
	report.Cases = report.Runs
	if len(cfg.Servers) == 0 {
		// The cases in index order up to the first failing one, whatever
		// the workers ran beyond it: the same with one worker or many.
		report.Cases, report.Runs, report.Steps, report.Faults, report.Searched = res.run, res.run+res.shrunk, res.steps, res.faults, res.searched
	} else if first := e.firstFail.Load(); first > 0 {
		report.Cases = int(first)
	}
	if f := e.lastFinding(); f != nil {
		report.Findings = []Finding{*f}
		report.FailFile = failFile(printed)
	} else if strings.Contains(printed, "--- FAIL") {
		// The campaign failed without a finding of ours: rapid itself
		// complained (a flaky case, a panic in the harness).
		return report, fmt.Errorf("fuzz: the campaign failed:\n%s", printed)
	}
	return report, nil
}
