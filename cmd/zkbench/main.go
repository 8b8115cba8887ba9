// Command zkbench measures the fake ZooKeeper against a real ensemble and
// prints the comparison as one Markdown table.
//
// It builds the test binary of package zkfake/zkbench once and runs each
// benchmark on the fake ("<bench>/fake", with a time budget) and, when
// ZK_SERVERS names an ensemble, right after on the ensemble
// ("<bench>/real", with a fixed, small iteration count, so that the whole
// run stays within minutes: a thousand lock waiters on a real ensemble are
// slow to set up and to serve). It does so -count times, round after round,
// and every cell is the median of the rounds: alternating the sides keeps a
// noisy spell on a shared machine from falling on one side only. Then it
// times a fuzz campaign of recipe.Mutex on each side, which needs a program
// of its own (fuzz.Run); a real case takes seconds, so the real campaign is
// a few cases.
//
// The table gives, per workload, the fake's and the ensemble's time per
// operation, their ratio, the fake's allocations per operation, and the
// workload's own metrics (requests per lock acquisition, watch events per
// release, heap per znode, …). Above it: the date, the machine and the
// ensemble; below it: the targets the fake is held to, met or not, and the
// commands that made the numbers. go test's own output is echoed to stderr
// as it comes.
//
// Usage, from the module's root:
//
//	go run ./cmd/zkbench                      # the fake alone
//	ZK_SERVERS=$(.ci/ensemble up) make bench  # both sides
//
// The flags:
//
//	-bench regexp         top-level benchmarks to run, no '/' (default ".")
//	-benchtime d          the fake side's -benchtime (default 1s)
//	-real-benchtime Nx    the real side's -benchtime (default 200x)
//	-count n              runs of every benchmark; cells are medians (default 3)
//	-fuzz-cases n         fuzz cases to time on the fake; 0 leaves them out (default 2000)
//	-real-fuzz-cases n    fuzz cases to time on the ensemble; 0 leaves them out (default 3)
//	-pkg path             the benchmarks' package (default ./zkfake/zkbench/)
//	-go path              the go command (default "go")
//	-real-settings text   how the ensemble runs beyond what its four-letter
//	                      words report (fsync, JIT), shown in the heading;
//	                      `make bench` passes `.ci/ensemble settings`
//	-q                    do not echo go test's output
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

// options are the command's flags.
type options struct {
	bench         string
	benchtime     string
	realBenchtime string
	count         int
	fuzzCases     int
	realFuzzCases int
	mutantSeeds   int
	pkg           string
	goCmd         string
	quiet         bool
	realSettings  string // how the ensemble runs, beyond what it reports
	dir           string // where go test runs; empty for the current directory
}

func main() {
	var o options
	flag.StringVar(&o.bench, "bench", ".", "top-level benchmarks to run (a regexp without '/')")
	flag.StringVar(&o.benchtime, "benchtime", "1s", "-benchtime of the fake side")
	flag.StringVar(&o.realBenchtime, "real-benchtime", "200x", "-benchtime of the real side (an iteration count bounds the run)")
	flag.IntVar(&o.count, "count", 3, "runs of every benchmark; the table shows medians")
	flag.IntVar(&o.fuzzCases, "fuzz-cases", 2000, "fuzz cases to time on the fake (0 leaves them out)")
	flag.IntVar(&o.realFuzzCases, "real-fuzz-cases", 3, "fuzz cases to time on the ensemble (0 leaves them out)")
	flag.IntVar(&o.mutantSeeds, "mutant-seeds", 5, "seeds to find each built-in mutant with, on the fake (0 leaves them out)")
	flag.StringVar(&o.pkg, "pkg", "./zkfake/zkbench/", "the benchmarks' package")
	flag.StringVar(&o.goCmd, "go", "go", "the go command")
	flag.BoolVar(&o.quiet, "q", false, "do not echo go test's output to stderr")
	flag.StringVar(&o.realSettings, "real-settings", "", "how the ensemble runs beyond what it reports, e.g. its fsync setting (as .ci/ensemble settings prints it); shown with it")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "zkbench: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, o, os.Args[1:], os.Getenv(ensemble.ServersEnv), os.Stdout, os.Stderr))
}

// run does the command's work and returns its exit status: 0, 1 when a
// benchmark failed (the table is printed all the same), 2 for bad flags or
// a bad ZK_SERVERS. args are the command's arguments, for the record of how
// the table was made; servers is ZK_SERVERS, empty for the fake alone.
func run(ctx context.Context, o options, args []string, servers string, stdout, stderr io.Writer) int {
	if err := o.check(); err != nil {
		fmt.Fprintf(stderr, "zkbench: %v\n", err)
		return 2
	}
	echo := stderr
	if o.quiet {
		echo = nil
	}
	rep := report{date: time.Now(), machine: describeMachine()}
	invocation := "go run ./cmd/zkbench"
	if len(args) > 0 {
		invocation += " " + shellJoin(args)
	}
	if servers == "" {
		rep.ensemble = "none (" + ensemble.ServersEnv + " is unset)"
	} else {
		desc, err := describeEnsemble(servers)
		if err != nil {
			fmt.Fprintf(stderr, "zkbench: %s=%s: %v\n", ensemble.ServersEnv, servers, err)
			return 2
		}
		if o.realSettings != "" {
			desc += ", " + o.realSettings
		}
		rep.ensemble = desc
		invocation = ensemble.ServersEnv + "=" + servers + " " + invocation
	}
	rep.commands = append(rep.commands, invocation, "# which runs:")

	status := 0
	var results []result
	fail := func(note string) {
		rep.notes = append(rep.notes, note)
		status = 1
	}

	// One test binary serves every run, so that the runs can alternate
	// sides cheaply: each benchmark runs on the fake and then at once on
	// the ensemble, round after round, and a noisy spell on a shared
	// machine falls on both sides alike instead of on one side's batch.
	tmp, err := os.MkdirTemp("", "zkbench")
	if err != nil {
		fmt.Fprintf(stderr, "zkbench: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "zkbench.test")
	buildArgs := []string{"test", "-c", "-o", bin, o.pkg}
	rep.commands = append(rep.commands, o.goCmd+" "+shellJoin([]string{"test", "-c", "-o", "zkbench.test", o.pkg}))
	names, err := o.prepare(ctx, bin, buildArgs, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "zkbench: %v\n", err)
		return 1
	}
	sides := []struct{ target, benchtime, servers string }{{"fake", o.benchtime, ""}}
	if servers != "" {
		sides = append(sides, struct{ target, benchtime, servers string }{"real", o.realBenchtime, servers})
	}
	what := "on the fake"
	if servers != "" {
		what = "on the fake and then on the ensemble"
	}
	rep.commands = append(rep.commands, fmt.Sprintf("# then %d round(s) of: for each benchmark B matched by %s, %s:", o.count, shellJoin([]string{o.bench}), what))
	for _, side := range sides {
		command := "zkbench.test " + shellJoin(o.runArgs("B", side.target, side.benchtime))
		if side.servers != "" {
			command = ensemble.ServersEnv + "=" + side.servers + " " + command
		}
		rep.commands = append(rep.commands, command)
	}
	failed := map[string]bool{}
	dir := filepath.Join(o.dir, o.pkg)
	for round := 0; round < o.count && ctx.Err() == nil; round++ {
		for _, name := range names {
			for _, side := range sides {
				if ctx.Err() != nil {
					break
				}
				env := os.Environ()
				if side.servers != "" {
					env = append(env, ensemble.ServersEnv+"="+side.servers)
				}
				rs, err := runBinary(ctx, bin, dir, env, o.runArgs(name, side.target, side.benchtime), echo, stderr)
				results = append(results, rs...)
				if err != nil && ctx.Err() == nil && !failed[name+side.target] {
					failed[name+side.target] = true
					fail(fmt.Sprintf("%s on the %s side failed (%v); its rows may be missing or partial. See go test's output above.", name, side.target, err))
				}
			}
		}
	}

	campaign := func(cases, workers int, servers string) *side {
		if cases == 0 || ctx.Err() != nil {
			return nil
		}
		s, command, note, err := timeFuzz(ctx, cases, workers, servers, stderr)
		if command != "" {
			rep.commands = append(rep.commands, command)
		}
		if err != nil {
			rep.notes = append(rep.notes, fmt.Sprintf("The fuzz campaign failed: %v", err))
			status = 1
		}
		if note != "" {
			rep.notes = append(rep.notes, note)
		}
		return s
	}

	// The campaign on one worker and on every core: the same cases,
	// so the ratio of their rates is the speed-up.
	cores := runtime.GOMAXPROCS(0)
	one := row{workload: fuzzWorkload + "/workers=1", fake: campaign(o.fuzzCases, 1, "")}
	all := row{workload: fmt.Sprintf("%s/workers=%d", fuzzWorkload, cores), fake: campaign(o.fuzzCases, cores, "")}
	if servers != "" && ctx.Err() == nil {
		one.real = campaign(o.realFuzzCases, 1, servers)
	}
	if one.fake != nil && all.fake != nil && one.fake.values["cases/s"] > 0 {
		all.fake.values["speed-up"] = all.fake.values["cases/s"] / one.fake.values["cases/s"]
	}
	var mutants []row
	if o.mutantSeeds > 0 && ctx.Err() == nil {
		var command string
		var notes []string
		mutants, command, notes = findMutants(ctx, o.mutantSeeds, stderr)
		rep.commands = append(rep.commands, command)
		rep.notes = append(rep.notes, notes...)
	}
	if ctx.Err() != nil {
		rep.notes = append(rep.notes, "Interrupted: the table is incomplete.")
		status = 1
	}
	rep.rows = collect(results)
	for _, r := range []row{one, all} {
		if r.fake != nil || r.real != nil {
			rep.rows = append(rep.rows, r)
		}
	}
	rep.rows = append(rep.rows, mutants...)
	writeMarkdown(stdout, rep)
	return status
}

// check validates the options.
func (o options) check() error {
	if strings.Contains(o.bench, "/") {
		return fmt.Errorf("-bench %q: give a regexp for top-level benchmarks only, without '/'; the command adds the target", o.bench)
	}
	if _, err := regexp.Compile(o.bench); err != nil {
		return fmt.Errorf("-bench: %v", err)
	}
	if o.count < 1 {
		return fmt.Errorf("-count %d: want at least 1", o.count)
	}
	if o.fuzzCases < 0 || o.realFuzzCases < 0 {
		return fmt.Errorf("-fuzz-cases %d, -real-fuzz-cases %d: want 0 or more", o.fuzzCases, o.realFuzzCases)
	}
	return nil
}

// prepare builds the benchmarks' test binary at bin with go and buildArgs,
// and returns the names of the top-level benchmarks that -bench matches.
func (o options) prepare(ctx context.Context, bin string, buildArgs []string, stderr io.Writer) ([]string, error) {
	build := exec.CommandContext(ctx, o.goCmd, buildArgs...)
	build.Dir = o.dir
	build.Stdout, build.Stderr = stderr, stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("building the benchmarks: %w", err)
	}
	list := exec.CommandContext(ctx, bin, "-test.list", o.bench)
	list.Dir = filepath.Join(o.dir, o.pkg)
	list.Stderr = stderr
	out, err := list.Output()
	if err != nil {
		return nil, fmt.Errorf("listing the benchmarks: %w", err)
	}
	var names []string
	for _, line := range strings.Fields(string(out)) {
		if strings.HasPrefix(line, "Benchmark") {
			names = append(names, line)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("-bench %q matches no benchmark in %s", o.bench, o.pkg)
	}
	return names, nil
}

// runArgs are the test binary's arguments for one run of benchmark name on
// one side.
func (o options) runArgs(name, target, benchtime string) []string {
	return []string{"-test.run", "^$", "-test.bench", "^" + name + "$/" + target, "-test.benchmem",
		"-test.benchtime", benchtime, "-test.timeout", "60m"}
}

// runBinary runs the test binary bin with args in dir and env, echoing its
// standard output to echo (if not nil) and its standard error to stderr,
// and returns the benchmark results it printed.
func runBinary(ctx context.Context, bin, dir string, env, args []string, echo, stderr io.Writer) ([]result, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	results, parseErr := parseResults(out, echo)
	waitErr := cmd.Wait()
	return results, errors.Join(waitErr, parseErr)
}

// shellJoin renders args for a shell, quoting those that need it.
func shellJoin(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$*?[]^|&;<>()`!#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		quoted[i] = a
	}
	return strings.Join(quoted, " ")
}
