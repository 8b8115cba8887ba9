package main

import (
	"strings"
	"testing"
	"time"
)

func TestFormatting(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{formatNs(312.4), "312 ns"},
		{formatNs(1934), "1.93 µs"},
		{formatNs(1000), "1 µs"},
		{formatNs(1350860), "1.35 ms"},
		{formatNs(9443523248), "9.44 s"},
		{formatNs(0.5), "0.5 ns"},
		{formatBytes(112), "112 B"},
		{formatBytes(85526), "85.5 kB"},
		{formatBytes(615770328), "616 MB"},
		{formatRatio(843.2), "843×"},
		{formatRatio(1.31), "1.31×"},
		{formatRatio(12345.6), "12,346×"},
		{formatNumber(6), "6"},
		{formatNumber(0.1531), "0.153"},
		{formatNumber(414.3), "414"},
		{formatNumber(1142.7), "1,143"},
		{formatNumber(6936115), "6.94M"},
		{formatCount(1000000), "1,000,000"},
		{formatCount(999), "999"},
		{formatCount(-1234), "-1,234"},
		{formatMetric(6020, "ns/znode"), "6.02 µs/znode"},
		{formatMetric(414.2, "B/znode"), "414 B/znode"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestLabel(t *testing.T) {
	for _, tc := range []struct{ workload, want string }{
		{"Get", "get"},
		{"CreateDelete", "create + delete"},
		{"Reads/goroutines=1", "reads, 1 goroutine"},
		{"ReadWriteMix/goroutines=16", "70/30 read/write, 16 goroutines"},
		{"LockHandoff/waiters=1000", "lock handoff, 1,000 waiters"},
		{"RWReadUncontended", "RWMutex RLock + RUnlock, uncontended"},
		{"RWLockHandoff/readers=100", "RWMutex handoff, writer to 100 readers to writer"},
		{"RWLockHandoff/readers=1", "RWMutex handoff, writer to 1 reader to writer"},
		{"ZnodeMemory/znodes=1000000", "memory, 1,000,000 znodes"},
		{"Unknown/x=1", "Unknown/x=1"},
		{"Reads/goroutines=many", "Reads/goroutines=many"},
	} {
		if got := label(tc.workload); got != tc.want {
			t.Errorf("label(%q) = %q, want %q", tc.workload, got, tc.want)
		}
	}
}

func sideOf(values map[string]float64) *side { return &side{runs: 1, values: values} }

func TestMetricsCell(t *testing.T) {
	r := row{
		workload: "LockHandoff/waiters=10",
		fake:     sideOf(map[string]float64{"ns/op": 1, "B/op": 5, "allocs/op": 1, "ops/acquire": 6, "wakeups/release": 1}),
		real:     sideOf(map[string]float64{"ns/op": 2, "ops/acquire": 6.5, "wakeups/release": 1, "events/release": 2}),
	}
	want := "2 events/release (real), 6 / 6.5 ops/acquire (fake / real), 1 wakeups/release"
	if got := metricsCell(r); got != want {
		t.Errorf("metricsCell = %q, want %q", got, want)
	}
}

func TestCheckTargets(t *testing.T) {
	rows := []row{
		{workload: "Get", fake: sideOf(map[string]float64{"ns/op": 250}), real: sideOf(map[string]float64{"ns/op": 250000})},
		{workload: "Set", fake: sideOf(map[string]float64{"ns/op": 1000}), real: sideOf(map[string]float64{"ns/op": 600000})},
		{workload: "Create", fake: sideOf(map[string]float64{"ns/op": 500}), real: sideOf(map[string]float64{"ns/op": 700000})},
		{workload: "CreateDelete", fake: sideOf(map[string]float64{"ns/op": 1500})},
		{workload: "Reads/goroutines=1", fake: sideOf(map[string]float64{"ns/op": 400})},
		{workload: "Reads/goroutines=16", fake: sideOf(map[string]float64{"ns/op": 500})},
		{workload: "FuzzCase/workers=1", fake: sideOf(map[string]float64{"cases/s": 500})},
		{workload: "FuzzCase/workers=2", fake: sideOf(map[string]float64{"cases/s": 800, "speed-up": 1.6})},
	}
	want := []string{
		"Get under 300 ns on the fake: 250 ns, met",
		"Create+Delete under 2 µs on the fake: 1.5 µs, met",
		"every write at least 1,000× faster on the fake than on the ensemble: the slowest is set at 600×, NOT met",
		"a fuzz campaign on 2 workers at least 1.7× the cases per second of 1 worker: 1.6×, NOT met",
		"reads from 16 goroutines past 1 goroutine's throughput on the fake: 0.8× of it, NOT met",
	}
	wantTargets(t, rows, want)
	if got := checkTargets(nil); len(got) != 0 {
		t.Errorf("checkTargets(nil) = %q, want nothing", got)
	}
}

// wantTargets fails t unless checkTargets(rows) says want, line by line.
func wantTargets(t *testing.T, rows []row, want []string) {
	t.Helper()
	if got := checkTargets(rows); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("checkTargets =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The lock's targets are ratios of rows of the same run, and are said only
// when the run has every row they need.
func TestCheckLockTargets(t *testing.T) {
	ns := func(v float64) *side { return sideOf(map[string]float64{"ns/op": v}) }
	rows := []row{
		{workload: "Create", fake: ns(600)},
		{workload: "Get", fake: ns(200)},
		{workload: "Children", fake: ns(800)},
		{workload: "Delete", fake: ns(400)},
		{workload: "LockUncontended", fake: sideOf(map[string]float64{"ns/op": 5000, "allocs/op": 12})},
		{workload: "LockHandoff/waiters=1", fake: ns(20000)},
		{workload: "LockHandoff/waiters=1000", fake: ns(50000)},
	}
	want := []string{
		"Get under 300 ns on the fake: 200 ns, met",
		"Lock + Unlock, uncontended, within 2× its requests on the fake (create + get + children + delete: 2 µs): 5 µs, 2.5×, NOT met",
		"lock handoff with 1,000 waiters within 2× the handoff with 1 on the fake: 50 µs and 20 µs, 2.5×, NOT met",
		"at most 12 allocations per uncontended Lock + Unlock on the fake: 12, met",
	}
	wantTargets(t, rows, want)

	rows[4].fake = sideOf(map[string]float64{"ns/op": 4000, "allocs/op": 13})
	rows[6].fake = ns(40000)
	want = []string{
		"Get under 300 ns on the fake: 200 ns, met",
		"Lock + Unlock, uncontended, within 2× its requests on the fake (create + get + children + delete: 2 µs): 4 µs, 2×, met",
		"lock handoff with 1,000 waiters within 2× the handoff with 1 on the fake: 40 µs and 20 µs, 2×, met",
		"at most 12 allocations per uncontended Lock + Unlock on the fake: 13, NOT met",
	}
	wantTargets(t, rows, want)

	// Without the Children row, the first target cannot be told; without
	// the one-waiter row, the second.
	wantTargets(t, []row{rows[0], rows[1], rows[3], rows[4], rows[6]}, []string{
		"Get under 300 ns on the fake: 200 ns, met",
		"at most 12 allocations per uncontended Lock + Unlock on the fake: 13, NOT met",
	})
}

func TestWriteMarkdown(t *testing.T) {
	var b strings.Builder
	writeMarkdown(&b, report{
		date:     time.Date(2026, 12, 1, 0, 30, 0, 0, time.UTC),
		machine:  "a CPU, 2 cores",
		ensemble: "none",
		commands: []string{"go run ./cmd/zkbench"},
		rows: []row{
			{workload: "Get", fake: sideOf(map[string]float64{"ns/op": 312, "B/op": 112, "allocs/op": 2}), real: sideOf(map[string]float64{"ns/op": 263000})},
			{workload: "ZnodeMemory/znodes=1000000", fake: sideOf(map[string]float64{"ns/op": 6.02e9, "B/znode": 414.2})},
			{workload: "FuzzCase/workers=1", fake: sideOf(map[string]float64{"ns/op": 1e7, "cases/s": 100, "steps/case": 25}),
				real: sideOf(map[string]float64{"ns/op": 5e9, "cases/s": 0.2, "steps/case": 31})},
		},
		notes: []string{"A note."},
	})
	out := b.String()
	for _, want := range []string{
		"Measured 2026-12-01 00:30 UTC on a CPU, 2 cores.",
		"| workload | fake | real | real ÷ fake | fake allocations | metrics |",
		"| get | 312 ns | 263 µs | 843× | 112 B, 2 allocs |  |",
		"| memory, 1,000,000 znodes | 6.02 s | — | — |  | 414 B/znode |",
		"| fuzz case (recipe.Mutex, up to 5 clients and 80 steps), 1 worker | 10 ms | 5 s | 500× |  | 100 / 0.2 cases/s (fake / real), 25 / 31 steps/case (fake / real) |",
		"- Get under 300 ns on the fake: 312 ns, NOT met",
		"go run ./cmd/zkbench",
		"A note.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestShellJoin(t *testing.T) {
	got := shellJoin([]string{"test", "-run", "^$", "-bench", "Get|Set/fake", "it's"})
	want := `test -run '^$' -bench 'Get|Set/fake' 'it'\''s'`
	if got != want {
		t.Errorf("shellJoin = %s, want %s", got, want)
	}
}

func TestOptionsCheck(t *testing.T) {
	good := options{bench: ".", count: 1}
	if err := good.check(); err != nil {
		t.Errorf("check(%+v) = %v, want nil", good, err)
	}
	for _, o := range []options{
		{bench: "Get/fake", count: 1},
		{bench: "(", count: 1},
		{bench: ".", count: 0},
		{bench: ".", count: 1, fuzzCases: -1},
	} {
		if err := o.check(); err == nil {
			t.Errorf("check(%+v) = nil, want an error", o)
		}
	}
}
