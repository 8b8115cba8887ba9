// Command zkfuzz runs a fuzzing campaign against a ZooKeeper recipe:
// recipe.Mutex, recipe.Election, recipe.RWMutex, recipe.Semaphore,
// go-zookeeper's own zk.Lock over real go-zookeeper clients, or one of the
// deliberately broken mutants of package fuzz/targets. Each case starts an
// in-memory ZooKeeper (zkfake) in virtual time, runs 2 to 8 clients that
// loop — lock, work and unlock; campaign, lead, resign and observe; read
// and write; acquire and release leases — and injects faults along a drawn
// schedule: lost requests and replies, partitions, session expiries,
// crashes, frozen processes, time passing. A case that breaks mutual
// exclusion or the recipe's model, wakes a herd, gets stuck, leaks or lets
// an expired holder write unfenced is shrunk to a short story, which zkfuzz
// prints with the path of porcupine's HTML view of the history.
//
//	go run ./cmd/zkfuzz                          # recipe.Mutex, 2000 cases
//	go run ./cmd/zkfuzz -recipe=election         # recipe.Election (rwmutex, semaphore: the others)
//	go run ./cmd/zkfuzz -workers=1 -shard=2/4    # one core, the second quarter of the cases
//	go run ./cmd/zkfuzz -recipe=no-relist        # a mutant: found in seconds
//	go run ./cmd/zkfuzz -list                    # the recipes and mutants there are
//	go run ./cmd/zkfuzz -recipe=zk.Lock/orphan   # go-zookeeper's zk.Lock, unchanged: #229
//	go run ./cmd/zkfuzz -recipe=semaphore -real-clients # every client a real *zk.Conn
//	go run ./cmd/zkfuzz -cases=10000 -seed=7     # a longer, repeatable run
//
// With ZK_SERVERS naming a ZooKeeper ensemble (loopback addresses), a lock's
// campaign runs against it instead, in real time with real goroutine
// scheduling, faults injected through a loopback proxy; a finding is
// reported as it happened, not shrunk, and -cases defaults to 10. The
// command reads the variable and passes the ensemble to the campaign
// (fuzz.OnEnsemble); package fuzz itself reads no environment, so
// `go test` runs its campaigns and fail files on the fake wherever
// ZK_SERVERS is set.
//
//	ZK_SERVERS=127.0.0.1:22181,127.0.0.1:22182,127.0.0.1:22183 go run ./cmd/zkfuzz
//
// It exits 0 when the campaign found nothing, 1 when it found something,
// and 2 on bad usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/fuzz/targets"
	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

const defaultLocker = "recipe.Mutex"

// aliases are the short names of the project's recipes.
var aliases = map[string]string{"mutex": defaultLocker, "election": "recipe.Election", "rwmutex": "recipe.RWMutex", "semaphore": "recipe.Semaphore"}

// realCases is the default number of cases against a real ensemble, where
// a case takes seconds.
const realCases = 10

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// locker is a recipe zkfuzz can run: a lock, an election, a mutant.
type locker struct {
	name, bug string
	detector  fuzz.Detector
	also      []fuzz.Detector // other detectors that find it
	target    fuzz.Target
	opts      []fuzz.Option
	// known is the catalogue's record, for a known bug: the story it
	// finds is told under it.
	known *targets.KnownBug
}

func lockers() map[string]locker {
	m := map[string]locker{
		defaultLocker:      {name: defaultLocker, bug: "the project's lock", target: fuzz.Lock(fuzz.RecipeMutex)},
		"recipe.Election":  {name: "recipe.Election", bug: "the project's leader election", target: targets.Election(targets.RecipeElection)},
		"recipe.RWMutex":   {name: "recipe.RWMutex", bug: "the project's read/write lock", target: targets.RWMutex(targets.RecipeRWMutex)},
		"recipe.Semaphore": {name: "recipe.Semaphore", bug: "the project's counting semaphore", target: targets.Semaphore(targets.RecipeSemaphore)},
		"zk.Lock":          {name: "zk.Lock", bug: "go-zookeeper v1.0.4's own zk.Lock, unchanged, on real go-zookeeper clients", target: targets.ZKLock()},
	}
	for _, d := range targets.ZKLockDefects() {
		m[d.Name] = locker{name: d.Name, bug: d.Bug, detector: d.Detectors[0], also: d.Detectors[1:], target: targets.ZKLock(), opts: d.Options}
	}
	for _, b := range targets.Catalogue() {
		opts := append(slices.Clip(b.Options), fuzz.OnlyFindings(b.Accepts))
		m[b.Name] = locker{name: b.Name, bug: b.Recipe + ": " + b.Title, detector: b.Detectors[0], also: b.Detectors[1:], target: b.Target, opts: opts, known: &b}
	}
	for _, mu := range targets.Mutants() {
		m[mu.Name] = locker{name: mu.Name, bug: mu.Recipe + " mutant: " + mu.Bug, detector: mu.Detector, target: mu.Target, opts: mu.Options}
	}
	return m
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("zkfuzz", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("recipe", defaultLocker, "what to fuzz: recipe.Mutex (mutex), recipe.Election (election), recipe.RWMutex (rwmutex), recipe.Semaphore (semaphore) or a mutant (see -list)")
	fs.StringVar(name, "locker", defaultLocker, "the old name of -recipe")
	cases := fs.Int("cases", 2000, "how many cases to try")
	seed := fs.Uint64("seed", 0, "the campaign's seed (0: a random one, printed)")
	clients := fs.Int("clients", 0, "the most clients a case runs, 2 to 8 (default 5, or what the mutant needs)")
	steps := fs.Int("steps", 0, "the most actions in a case's schedule (default 80)")
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "how many cases to run at once; the result is the same with any number")
	shard := fs.String("shard", "", "K/N: run shard K (from 1) of N of the campaign's cases, every N-th index from K-1; N jobs with the same -seed and -cases run the whole campaign")
	htmlDir := fs.String("html", "", "where to write porcupine's HTML report of a finding (default $TMPDIR/zksim-linearizability)")
	shrink := fs.Duration("shrinktime", 20*time.Second, "how long to spend shrinking a finding")
	noFailFile := fs.Bool("nofailfile", false, "do not write rapid's fail file (testdata/rapid/<campaign>/) for a finding")
	list := fs.Bool("list", false, "list the recipes and mutants and exit")
	quiet := fs.Bool("quiet", false, "no progress line")
	record := fs.Bool("track-record", false, "hunt every known bug of the catalogue with each seed from 1 to -seeds, on one worker, and print the track record as a Markdown table")
	recordSeeds := fs.Int("seeds", 20, "with -track-record: how many seeds per known bug")
	recordOnly := fs.String("only", "", "with -track-record: hunt only the known bugs whose names contain this")
	realClients := fs.Bool("real-clients", false, "make every client go-zookeeper's own *zk.Conn over a pipe to the fake, instead of the fake's in-process Conn")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: zkfuzz [flags]\n\nRuns a fuzzing campaign against a ZooKeeper recipe on the in-memory fake.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "zkfuzz: unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		return 2
	}
	if *record {
		if *recordSeeds < 1 {
			fmt.Fprintln(stderr, "zkfuzz: -seeds must be positive")
			return 2
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		if err := trackRecord(ctx, *recordSeeds, *recordOnly, stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "zkfuzz: %v\n", err)
			return 1
		}
		return 0
	}
	all := lockers()
	if *list {
		printLockers(stdout, all)
		return 0
	}
	if full, ok := aliases[*name]; ok {
		*name = full
	}
	l, ok := all[*name]
	if !ok {
		fmt.Fprintf(stderr, "zkfuzz: no recipe or mutant %q; -list shows them\n", *name)
		return 2
	}
	if *cases <= 0 {
		fmt.Fprintln(stderr, "zkfuzz: -cases must be positive")
		return 2
	}
	shardK, shardN, err := parseShard(*shard)
	if err != nil {
		fmt.Fprintf(stderr, "zkfuzz: %v\n", err)
		return 2
	}
	if *workers < 1 {
		fmt.Fprintln(stderr, "zkfuzz: -workers must be positive")
		return 2
	}
	if *clients != 0 && (*clients < 2 || *clients > 8) {
		fmt.Fprintln(stderr, "zkfuzz: -clients must be from 2 to 8")
		return 2
	}
	// The ensemble, if any, comes from the environment here, in the
	// command, and goes to the campaign explicitly.
	servers, err := ensemble.ServersFromEnv()
	if err != nil {
		fmt.Fprintf(stderr, "zkfuzz: %v\n", err)
		return 2
	}
	real := len(servers) > 0
	if real && !flagSet(fs, "cases") {
		*cases = realCases
	}

	opts := []fuzz.Option{
		fuzz.WithName("zkfuzz-" + l.name),
		fuzz.WithCases(*cases),
		fuzz.WithSeed(*seed),
		fuzz.WithHTMLDir(*htmlDir),
		fuzz.WithShrinkTime(*shrink),
		fuzz.OnEnsemble(servers...),
		fuzz.WithWorkers(*workers),
		fuzz.WithShard(shardK, shardN),
	}
	if *noFailFile {
		opts = append(opts, fuzz.WithoutFailFile())
	}
	if *realClients {
		opts = append(opts, fuzz.WithRealClients())
	}
	// The recipe's own options, then the flags that override them.
	opts = append(opts, l.opts...)
	if *clients != 0 {
		opts = append(opts, fuzz.WithClients(*clients))
	}
	if *steps != 0 {
		opts = append(opts, fuzz.WithSteps(*steps))
	}
	if !*quiet {
		opts = append(opts, fuzz.WithProgress(func(p fuzz.Progress) { printProgress(stderr, p) }))
	}
	if real {
		fmt.Fprintf(stderr, "zkfuzz: running %d cases of %s on the ensemble at %s\n", *cases, l.name, strings.Join(servers, ","))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	report, err := fuzz.Run(ctx, l.target, opts...)
	if !*quiet {
		fmt.Fprintln(stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "zkfuzz: %v\n", err)
		return 1
	}
	replay := fmt.Sprintf("go run ./cmd/zkfuzz -recipe=%s -seed=%d -cases=%d", l.name, report.Seed, *cases)
	if *shard != "" {
		replay += " -shard=" + *shard
	}
	if report.Tokenless != "" {
		fmt.Fprintf(stdout, "note: %s hands out no fencing token, so it cannot refuse a write from a holder whose session ended (reported once; the campaign went on): %s\n", l.name, report.Tokenless)
	}
	if len(report.Findings) == 0 {
		verdict := "no finding"
		if report.Stopped {
			verdict = "stopped, no finding so far"
		}
		fmt.Fprintf(stdout, "%s: %s in %d cases (%d steps, %v, seed %d)\n", l.name, verdict, report.Cases, report.Steps, report.Elapsed.Round(time.Millisecond), report.Seed)
		printFaults(stdout, report.Faults)
		return 0
	}
	f := report.Findings[0]
	shrunk := fmt.Sprintf("shrunk in %d runs", report.Runs-report.Cases)
	if real {
		shrunk = "on the real ensemble, not shrunk"
	}
	took := fmt.Sprintf("in %v; %v with shrinking", report.Searched.Round(time.Millisecond), report.Elapsed.Round(time.Millisecond))
	if real {
		took = report.Elapsed.Round(time.Millisecond).String()
	}
	fmt.Fprintf(stdout, "%s: %s found after %d cases (%s, seed %d); %s:\n", l.name, f.Detector, report.Cases, took, report.Seed, shrunk)
	printFaults(stdout, report.Faults)
	if b := l.known; b != nil {
		fmt.Fprintf(stdout, "\n%s, %q: %s\nthe schedule: %s\nwhat users see: %s\nupstream: %s\n", b.Name, b.Title, b.Mechanism, b.Schedule, b.Symptom, b.Fixed)
	}
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, f.String())
	if report.FailFile != "" {
		fmt.Fprintf(stdout, "rapid's fail file: %s (the next campaign of %s run from here replays it first)\n", report.FailFile, l.name)
	}
	fmt.Fprintf(stdout, "replay the campaign: %s\n", replay)
	if l.detector != "" && l.detector != f.Detector && !slices.Contains(l.also, f.Detector) {
		fmt.Fprintf(stdout, "note: %s is a mutant expected to be found by %s\n", l.name, l.detector)
	}
	return 1
}

// parseShard reads -shard's K/N; "" is the whole campaign (0, 0).
func parseShard(s string) (k, n int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	if _, err := fmt.Sscanf(s, "%d/%d", &k, &n); err != nil || n < 1 || k < 1 || k > n || fmt.Sprintf("%d/%d", k, n) != s {
		return 0, 0, fmt.Errorf("-shard %q: want K/N with 1 <= K <= N", s)
	}
	return k, n, nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func printLockers(w io.Writer, all map[string]locker) {
	names := make([]string, 0, len(all))
	for n := range all {
		if n != defaultLocker {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	fmt.Fprintf(w, "%-24s %s\n", defaultLocker, all[defaultLocker].bug+" (the default)")
	for _, n := range names {
		l := all[n]
		if l.detector == "" {
			fmt.Fprintf(w, "%-24s %s\n", n, l.bug)
			continue
		}
		fmt.Fprintf(w, "%-24s %s: %s\n", n, l.detector, l.bug)
	}
}

// printFaults says what faults the cases injected and how partitions and
// pauses ended; nothing for a campaign on a real ensemble, which does not
// count them.
func printFaults(w io.Writer, f fuzz.Faults) {
	if f == (fuzz.Faults{}) {
		return
	}
	fmt.Fprintf(w, "faults injected: %s\n", f)
}

func printProgress(w io.Writer, p fuzz.Progress) {
	state := "searching"
	if p.Shrinking {
		state = "shrinking a finding"
	}
	fmt.Fprintf(w, "\r%7d cases  %6.0f cases/s  %9d steps  %d failing runs  %6s  %s   ", p.Cases, p.CasesPerSecond(), p.Steps, p.Findings, p.Elapsed.Round(100*time.Millisecond), state)
}
