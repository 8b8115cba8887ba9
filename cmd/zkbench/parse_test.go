package main

import (
	"reflect"
	"strings"
	"testing"
)

// sampleOutput is `go test -bench` output as the testing package prints it,
// with two runs (-count 2) of some benchmarks, a skipped real side, and
// lines that are not results.
const sampleOutput = `goos: linux
goarch: amd64
pkg: github.com/zksim/zksim/zkfake/zkbench
cpu: Intel(R) Xeon(R) Processor
BenchmarkGet/fake-2         	 3082507	       391.6 ns/op	     112 B/op	       2 allocs/op
BenchmarkGet/fake-2         	 3082507	       301.0 ns/op	     112 B/op	       2 allocs/op
--- SKIP: BenchmarkGet/real
    bench_test.go:45: ZK_SERVERS is unset: no real ensemble to measure
BenchmarkLockHandoff/fake/waiters=1000-2   	     207	   3703856 ns/op	         2.000 events/release	         6.000 ops/acquire	         1.000 wakeups/release	   85526 B/op	      56 allocs/op
BenchmarkLockHandoff/real/waiters=1000   	     200	   4950839 ns/op	         2.000 events/release	         6.000 ops/acquire	         1.000 wakeups/release	  133666 B/op	    1312 allocs/op
BenchmarkOther-2   	     10	   5 ns/op
PASS
ok  	github.com/zksim/zksim/zkfake/zkbench	21.018s
`

func TestParseResults(t *testing.T) {
	var echo strings.Builder
	results, err := parseResults(strings.NewReader(sampleOutput), &echo)
	if err != nil {
		t.Fatal(err)
	}
	if echo.String() != sampleOutput {
		t.Errorf("echoed %q, want the output unchanged", echo.String())
	}
	want := []result{
		{"BenchmarkGet/fake", 3082507, map[string]float64{"ns/op": 391.6, "B/op": 112, "allocs/op": 2}},
		{"BenchmarkGet/fake", 3082507, map[string]float64{"ns/op": 301, "B/op": 112, "allocs/op": 2}},
		{"BenchmarkLockHandoff/fake/waiters=1000", 207, map[string]float64{"ns/op": 3703856, "events/release": 2, "ops/acquire": 6, "wakeups/release": 1, "B/op": 85526, "allocs/op": 56}},
		// GOMAXPROCS=1 prints no suffix.
		{"BenchmarkLockHandoff/real/waiters=1000", 200, map[string]float64{"ns/op": 4950839, "events/release": 2, "ops/acquire": 6, "wakeups/release": 1, "B/op": 133666, "allocs/op": 1312}},
		{"BenchmarkOther", 10, map[string]float64{"ns/op": 5}},
	}
	if !reflect.DeepEqual(results, want) {
		t.Errorf("parsed\n%+v\nwant\n%+v", results, want)
	}
}

func TestParseResultRejects(t *testing.T) {
	for _, line := range []string{
		"",
		"PASS",
		"BenchmarkGet/fake-2", // a name alone
		"BenchmarkGet/fake-2 \t 100 \t 5 ns/op 7",   // an odd field count
		"BenchmarkGet/fake-2 \t 100 \t fast ns/op",  // not a number
		"BenchmarkGet/fake-2 \t 100 \t 112 B/op",    // no ns/op
		"--- FAIL: BenchmarkGet/fake-2 \t 100 \t 5", // a failure line
	} {
		if r, ok := parseResult(line); ok {
			t.Errorf("parseResult(%q) = %+v, want no result", line, r)
		}
	}
}

func TestSplitTarget(t *testing.T) {
	for _, tc := range []struct {
		name, workload, target string
		ok                     bool
	}{
		{"BenchmarkGet/fake", "Get", "fake", true},
		{"BenchmarkLockHandoff/real/waiters=10", "LockHandoff/waiters=10", "real", true},
		{"BenchmarkGet", "", "", false},
		{"BenchmarkGet/other", "", "", false},
		{"BenchmarkGet/x/fake", "", "", false},
	} {
		workload, target, ok := splitTarget(tc.name)
		if workload != tc.workload || target != tc.target || ok != tc.ok {
			t.Errorf("splitTarget(%q) = %q, %q, %v; want %q, %q, %v", tc.name, workload, target, ok, tc.workload, tc.target, tc.ok)
		}
	}
}

func TestCollectTakesMediansAndPairsSides(t *testing.T) {
	results, err := parseResults(strings.NewReader(sampleOutput+
		"BenchmarkGet/fake-2 \t 10 \t 500 ns/op \t 112 B/op \t 2 allocs/op\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := collect(results)
	if len(rows) != 2 {
		t.Fatalf("got %d rows, want 2 (Get, LockHandoff/waiters=1000): %+v", len(rows), rows)
	}
	get := rows[0]
	if get.workload != "Get" || get.real != nil || get.fake == nil || get.fake.runs != 3 {
		t.Fatalf("Get row = %+v, want three fake runs and no real side", get)
	}
	if got := get.fake.values["ns/op"]; got != 391.6 {
		t.Errorf("Get ns/op = %v, want the median of 391.6, 301 and 500", got)
	}
	lock := rows[1]
	if lock.workload != "LockHandoff/waiters=1000" || lock.fake == nil || lock.real == nil {
		t.Fatalf("LockHandoff row = %+v, want both sides", lock)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
