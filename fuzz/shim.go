package fuzz

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// This file is the package's shim over rapid and the testing package: the
// one place that knows how rapid seeds its checks, sets rapid's flags, and
// runs a campaign as a test suite from a program (testing.MainStart).
//
// Case k is the case rapid.Check runs k-th from a campaign's seed: rapid
// seeds its i-th check with the seed plus 0+1+...+i, so case k's seed is
// seed + k(k+1)/2, and rapid.Check with that seed and one check runs it
// alone (TestCaseSeedsAreRapids holds rapid to it).

// caseSeed is the seed rapid.Check gives the case of index k.
func caseSeed(seed uint64, k int) uint64 {
	n := uint64(k)
	return seed + n*(n+1)/2
}

// flagsMu guards rapid's flags while a rapid.Check reads them
// (checkReadingFlags): from setting them until rapid calls its property,
// by which time rapid has read every flag it reads before a failure.
var flagsMu sync.Mutex

// checkReadingFlags runs rapid.Check(t, prop) with rapid's flags set to
// values (none: as they are), holding flagsMu from setting them until
// rapid has read them — when it first calls prop, or returns — and then
// putting back the values they had. Every test that sets the flags does
// it here, so outside flagsMu they hold the command line's values: tests
// that run in parallel may each check with flags of their own, and Check
// reads the command line's, never another test's.
func checkReadingFlags(t *testing.T, values map[string]string, prop func(*rapid.T)) {
	t.Helper()
	flagsMu.Lock()
	old := map[string]string{}
	for name, v := range values {
		old[name] = flag.Lookup(name).Value.String()
		setFlag(name, v)
	}
	var read sync.Once
	done := func() {
		read.Do(func() {
			for name, v := range old {
				setFlag(name, v)
			}
			flagsMu.Unlock()
		})
	}
	defer done()
	rapid.Check(t, func(rt *rapid.T) {
		done()
		prop(rt)
	})
}

// setFlag sets one of rapid's flags; the caller holds flagsMu, or runs
// alone.
func setFlag(name, value string) {
	if err := flag.Set(name, value); err != nil {
		panic(fmt.Sprintf("fuzz: setting -%s: %v", name, err))
	}
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

func (programDeps) ImportPath() string { return "" }

func (programDeps) ModulePath() string { return "" }

func (programDeps) MatchString(pat, str string) (bool, error) { return true, nil }

func (programDeps) SetPanicOnExit0(bool) {}

func (programDeps) StartCPUProfile(io.Writer) error {
	return errors.New("fuzz: no profiling in a campaign run by Run")
}

func (programDeps) StopCPUProfile() {}

func (programDeps) StartTestLog(io.Writer) {}

func (programDeps) StopTestLog() error { return nil }

func (programDeps) WriteProfileTo(string, io.Writer, int) error { return nil }

func (programDeps) CoordinateFuzzing(time.Duration, int64, time.Duration, int64, int, []corpusEntry, []reflect.Type, string, string) error {
	return errors.New("fuzz: no fuzzing engine in a campaign run by Run")
}

func (programDeps) RunFuzzWorker(func(corpusEntry) error) error {
	return errors.New("fuzz: no fuzzing engine in a campaign run by Run")
}

func (programDeps) ReadCorpus(string, []reflect.Type) ([]corpusEntry, error) { return nil, nil }

func (programDeps) CheckCorpus([]any, []reflect.Type) error { return nil }

func (programDeps) ResetCoverage() {}

func (programDeps) SnapshotCoverage() {}

func (programDeps) InitRuntimeCoverage() (mode string, tearDown func(string, string) (string, error), snapcov func() float64) {
	return "", nil, nil
}
