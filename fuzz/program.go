package fuzz

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
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
	report.Cases = report.Runs
	if len(cfg.Servers) == 0 {
		// The cases in index order up to the first failing one, whatever
		// the workers ran beyond it: the same with one worker or many.
		report.Cases, report.Runs, report.Steps, report.Faults = res.run, res.run+res.shrunk, res.steps, res.faults
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

// setRapidFlags points rapid's flags, and the testing package's
// -test.parallel, at cfg and returns a function that puts them back.
func setRapidFlags(cfg config) (restore func(), err error) {
	values := map[string]string{
		"rapid.checks":     strconv.Itoa(cfg.Cases),
		"test.parallel":    strconv.Itoa(max(cfg.Workers, 1)),
		"rapid.seed":       strconv.FormatUint(cfg.Seed, 10),
		"rapid.nofailfile": strconv.FormatBool(cfg.NoFailFile),
	}
	if cfg.ShrinkTime > 0 {
		values["rapid.shrinktime"] = cfg.ShrinkTime.String()
	}
	old := map[string]string{}
	for name, v := range values {
		f := flag.Lookup(name)
		if f == nil {
			return nil, fmt.Errorf("fuzz: rapid has no flag -%s", name)
		}
		old[name] = f.Value.String()
		if err := f.Value.Set(v); err != nil {
			return nil, fmt.Errorf("fuzz: setting -%s: %w", name, err)
		}
	}
	return func() {
		for name, v := range old {
			_ = flag.Lookup(name).Value.Set(v)
		}
	}, nil
}

// captureStdout sends what is written to os.Stdout to w (nowhere if w is
// nil) until the returned function is called, which returns the text.
func captureStdout(w io.Writer) (func() string, error) {
	r, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	if w == nil {
		w = io.Discard
	}
	saved := os.Stdout
	os.Stdout = pw
	var b strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(io.MultiWriter(w, &b), r)
	}()
	return func() string {
		os.Stdout = saved
		pw.Close()
		<-done
		r.Close()
		return b.String()
	}, nil
}

var failFilePattern = regexp.MustCompile(`-rapid\.failfile="([^"]+)"`)

// failFile finds the fail file rapid names in its account of a failure.
func failFile(printed string) string {
	if m := failFilePattern.FindStringSubmatch(printed); m != nil {
		return m[1]
	}
	return ""
}

// corpusEntry mirrors the testing package's own (an alias of this very
// struct type there), which programDeps must name to satisfy its interface.
type corpusEntry = struct {
	Parent     string
	Path       string
	Data       []byte
	Values     []any
	Generation int
	IsSeed     bool
}

// programDeps is what testing.MainStart needs from the go command's
// generated test main: here, nothing but matching every test name. No
// profiling, coverage or fuzzing engine is attached.
type programDeps struct{}

func (programDeps) ImportPath() string                        { return "" }
func (programDeps) ModulePath() string                        { return "" }
func (programDeps) MatchString(pat, str string) (bool, error) { return true, nil }
func (programDeps) SetPanicOnExit0(bool)                      {}
func (programDeps) StartCPUProfile(io.Writer) error {
	return errors.New("fuzz: no profiling in a campaign run by Run")
}
func (programDeps) StopCPUProfile()                             {}
func (programDeps) StartTestLog(io.Writer)                      {}
func (programDeps) StopTestLog() error                          { return nil }
func (programDeps) WriteProfileTo(string, io.Writer, int) error { return nil }
func (programDeps) CoordinateFuzzing(time.Duration, int64, time.Duration, int64, int, []corpusEntry, []reflect.Type, string, string) error {
	return errors.New("fuzz: no fuzzing engine in a campaign run by Run")
}
func (programDeps) RunFuzzWorker(func(corpusEntry) error) error {
	return errors.New("fuzz: no fuzzing engine in a campaign run by Run")
}
func (programDeps) ReadCorpus(string, []reflect.Type) ([]corpusEntry, error) { return nil, nil }
func (programDeps) CheckCorpus([]any, []reflect.Type) error                  { return nil }
func (programDeps) ResetCoverage()                                           {}
func (programDeps) SnapshotCoverage()                                        {}
func (programDeps) InitRuntimeCoverage() (mode string, tearDown func(string, string) (string, error), snapcov func() float64) {
	return "", nil, nil
}
