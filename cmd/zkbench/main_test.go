package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zksim/zksim/fuzz"
)

// TestRunOnTheFake runs the command as `make bench` would without an
// ensemble, on one cheap benchmark: go test really runs, and its results
// reach the table.
func TestRunOnTheFake(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test")
	}
	var stdout, stderr strings.Builder
	o := options{bench: "^BenchmarkGet$", benchtime: "3x", realBenchtime: "3x", count: 2, pkg: "./zkfake/zkbench/", goCmd: "go", quiet: true, dir: "../.."}
	status := run(context.Background(), o, []string{"-bench", "^BenchmarkGet$"}, "", &stdout, &stderr)
	if status != 0 {
		t.Fatalf("status %d, stderr:\n%s\nstdout:\n%s", status, stderr.String(), stdout.String())
	}
	out := stdout.String()
	var getRow string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "| get |") {
			getRow = line
		}
	}
	cells := strings.Split(getRow, "|")
	if len(cells) < 7 {
		t.Fatalf("no get row with six cells in:\n%s", out)
	}
	if fake, real := strings.TrimSpace(cells[2]), strings.TrimSpace(cells[3]); !strings.HasSuffix(fake, "s") || real != "—" {
		t.Errorf("get row %q: want a fake time and no real one", getRow)
	}
	for _, want := range []string{
		"Real ensemble: none (ZK_SERVERS is unset).",
		"go run ./cmd/zkbench -bench '^BenchmarkGet$'",
		"go test -c -o zkbench.test ./zkfake/zkbench/",
		"# then 2 round(s) of: for each benchmark B matched by '^BenchmarkGet$', on the fake:",
		"zkbench.test -test.run '^$' -test.bench '^B$/fake' -test.benchmem -test.benchtime 3x",
		"- Get under 300 ns on the fake:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "fuzz case") {
		t.Errorf("a fuzz row without -fuzz-cases:\n%s", out)
	}
}

func TestRunRefusesABadEnsemble(t *testing.T) {
	for _, servers := range []string{"zk.example.com:2181", "10.0.0.1:2181", "127.0.0.1"} {
		var stdout, stderr strings.Builder
		o := options{bench: ".", count: 1, goCmd: "go", quiet: true}
		if status := run(context.Background(), o, nil, servers, &stdout, &stderr); status != 2 {
			t.Errorf("ZK_SERVERS=%s: status %d, want 2; stderr: %s", servers, status, stderr.String())
		}
		if stdout.Len() != 0 {
			t.Errorf("ZK_SERVERS=%s: printed a table:\n%s", servers, stdout.String())
		}
	}
}

func TestRunRefusesBadFlags(t *testing.T) {
	var stdout, stderr strings.Builder
	o := options{bench: "Get/fake", count: 1, goCmd: "go"}
	if status := run(context.Background(), o, nil, "", &stdout, &stderr); status != 2 || !strings.Contains(stderr.String(), "without '/'") {
		t.Errorf("status %d, stderr %q; want 2 and the reason", status, stderr.String())
	}
}

// The fuzz campaign can only be timed from a program: inside a test binary
// fuzz.Run refuses, and the command reports the refusal rather than a rate.
func TestTimeFuzzNeedsAProgram(t *testing.T) {
	var progress strings.Builder
	_, _, _, err := timeFuzz(context.Background(), 1, 1, "", &progress)
	if !errors.Is(err, fuzz.ErrInTest) {
		t.Errorf("timeFuzz in a test = %v, want fuzz.ErrInTest", err)
	}
}
