package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zksim/zksim/fuzz/targets"
)

func TestList(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"-list"}, &out, &errOut); code != 0 {
		t.Fatalf("-list exited %d: %s", code, errOut.String())
	}
	for _, want := range append([]string{defaultLocker}, mutantNames()...) {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-list lacks %s:\n%s", want, out.String())
		}
	}
}

func mutantNames() []string {
	var names []string
	for _, m := range targets.Mutants() {
		names = append(names, m.Name)
	}
	return names
}

func TestBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-recipe=nothing"},
		{"-cases=0"},
		{"-clients=9"},
		{"-clients=1"},
		{"-nosuchflag"},
		{"extra"},
	} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 2 {
			t.Errorf("%v exited %d, want 2 (%s)", args, code, errOut.String())
		}
		if errOut.Len() == 0 {
			t.Errorf("%v said nothing on stderr", args)
		}
	}
}

// TestBadServers checks that the command refuses a ZK_SERVERS it cannot
// use, rather than running on the fake as if it were unset.
func TestBadServers(t *testing.T) {
	t.Setenv("ZK_SERVERS", "zookeeper.example.com:2181")
	var out, errOut bytes.Buffer
	if code := run([]string{"-cases=1"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "ZK_SERVERS") {
		t.Errorf("exited %d, want 2 naming ZK_SERVERS: %s", code, errOut.String())
	}
}

// TestCampaign builds the command and runs campaigns with it: a program,
// not a test binary, which is what fuzz.Run is for. Its mutant,
// whole-name-order, shrinks to the end in half a second, so that the
// stories of one and two workers can be compared whole.
func TestCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs campaigns")
	}
	zkfuzz := buildZkfuzz(t)
	html := t.TempDir()

	out, code := zkfuzz("-recipe=whole-name-order", "-cases=300", "-seed=1", "-html="+html, "-shrinktime=60s", "-nofailfile", "-workers=2")
	if code != 1 {
		t.Fatalf("a campaign against whole-name-order exited %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{"whole-name-order: mutual-exclusion found after", "  1. [+0.000s] ", "porcupine's view of the history: " + html, "replay the campaign: go run ./cmd/zkfuzz -recipe=whole-name-order -seed=1 -cases=300", "cases/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	// One worker: the same case found, after as many cases, the same
	// story.
	again, _ := zkfuzz("-recipe=whole-name-order", "-cases=300", "-seed=1", "-html="+html, "-shrinktime=60s", "-nofailfile", "-quiet", "-workers=1")
	if story(again) != story(out) || foundAfter(t, again) != foundAfter(t, out) {
		t.Errorf("one worker told another story than two:\n%s\n---\n%s", out, again)
	}

	out, code = zkfuzz("-recipe=sound-for-test", "-cases=10")
	if code != 2 {
		t.Errorf("an unknown locker exited %d, want 2:\n%s", code, out)
	}
}

// TestTrackRecord runs the track record of one known bug for two seeds:
// a table with the bug's row, found in both, and nothing else on stdout.
func TestTrackRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs campaigns")
	}
	zkfuzz := buildZkfuzz(t)
	out, code := zkfuzz("-track-record", "-seeds=2", "-only=kazoo#490")
	if code != 0 {
		t.Fatalf("exited %d:\n%s", code, out)
	}
	row := regexp.MustCompile(`(?m)^\| python-zk/kazoo#490 \| Lock \| leak \| 2 of 2 seeds \| [0-9.]+ / [0-9]+ \| [0-9.hm]+[µm]?s / [0-9.hm]+[µm]?s \|$`)
	if !row.MatchString(out) || !strings.Contains(out, "| upstream | recipe | found by |") {
		t.Errorf("no table with the bug's row:\n%s", out)
	}
	if out, code := zkfuzz("-track-record", "-seeds=0"); code != 2 {
		t.Errorf("-seeds=0 exited %d, want 2:\n%s", code, out)
	}
}

// TestShards runs a campaign whole and in two shards: the shards run the
// whole campaign's cases between them, so the first failing case of the
// whole is the first of the two shards' first failing cases.
func TestShards(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs campaigns")
	}
	zkfuzz := buildZkfuzz(t)
	run := func(args ...string) string {
		out, _ := zkfuzz(append([]string{"-recipe=forget-guid", "-cases=2000", "-seed=3", "-shrinktime=1ms", "-nofailfile", "-quiet"}, args...)...)
		return out
	}
	whole := foundAfter(t, run()) - 1 // the failing case's index
	first := foundAfter(t, run("-shard=1/2")) - 1
	second := foundAfter(t, run("-shard=2/2")) - 1
	if got := min(2*first, 2*second+1); got != whole {
		t.Errorf("the whole campaign failed first at case %d, its shards at cases %d and %d", whole, 2*first, 2*second+1)
	}
	if out, code := zkfuzz("-shard=3/2"); code != 2 {
		t.Errorf("-shard=3/2 exited %d, want 2:\n%s", code, out)
	}
}

// TestStopsWhenAsked interrupts a campaign of a billion cases once its
// progress line shows cases run: it stops, and says how many cases it ran.
// How soon it stops is not timed here (a loaded machine would make that
// flaky); a campaign that has not stopped after stopLimit has hung.
func TestStopsWhenAsked(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs a campaign")
	}
	const stopLimit = time.Minute
	cmd := exec.Command(build(t), "-cases=1000000000", "-seed=1", "-nofailfile")
	cmd.Dir = t.TempDir()
	cmd.Env = fakeMode()
	var out bytes.Buffer
	cmd.Stdout = &out
	progress, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The progress line is rewritten in place ("\r   123 cases ..."): wait
	// for one that counts a case, then keep draining it.
	ran := regexp.MustCompile(`\r\s*[1-9]\d* cases`)
	var seen bytes.Buffer // stderr; read only once done is
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		for signalled := false; ; {
			n, err := progress.Read(buf)
			seen.Write(buf[:n])
			if !signalled && ran.Match(seen.Bytes()) {
				signalled = true
				close(started)
			}
			if err != nil {
				break
			}
		}
		done <- cmd.Wait() // after every read of the pipe, as Wait asks
	}()
	exited := false
	t.Cleanup(func() {
		if !exited {
			cmd.Process.Kill()
			<-done
		}
	})
	report := func() string { return out.String() + seen.String() }
	select {
	case <-started:
	case err := <-done:
		exited = true
		t.Fatalf("the campaign ended (%v) before it reported a case:\n%s", err, report())
	case <-time.After(stopLimit):
		t.Fatalf("the campaign reported no case in %v", stopLimit)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		exited = true
		if err != nil {
			t.Errorf("the campaign failed when asked to stop (%v):\n%s", err, report())
		}
	case <-time.After(stopLimit):
		t.Fatalf("the campaign had not stopped %v after it was asked", stopLimit)
	}
	if !regexp.MustCompile(`stopped, no finding so far in [1-9]\d* cases`).MatchString(out.String()) {
		t.Errorf("the report does not say how many cases ran:\n%s", report())
	}
}

// foundAfter reads how many cases a campaign ran to its finding.
func foundAfter(t *testing.T, out string) int {
	t.Helper()
	m := regexp.MustCompile(`found after (\d+) cases`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no finding:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// buildZkfuzz builds the command and returns a runner of it, in a
// directory of its own and in fake mode whatever the environment: its
// output and exit code.
func buildZkfuzz(t *testing.T) func(args ...string) (string, int) {
	t.Helper()
	bin := build(t)
	return func(args ...string) (string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = t.TempDir()
		// Fake mode, whatever the environment: the shrunk story is what
		// is checked.
		cmd.Env = fakeMode()
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return string(out), 0
		case errors.As(err, &exit):
			return string(out), exit.ExitCode()
		}
		t.Fatalf("running zkfuzz: %v", err)
		return "", -1
	}
}

// fakeMode returns the environment without ZK_SERVERS, so that the
// command runs its campaign on the fake whatever the test's environment.
func fakeMode() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ZK_SERVERS=") {
			env = append(env, kv)
		}
	}
	return env
}

// build builds the command and returns its path.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "zkfuzz")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// story returns the numbered lines of a finding's story.
func story(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "✗") || len(l) > 5 && l[3] == '.' && l[5] == '[' {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}
