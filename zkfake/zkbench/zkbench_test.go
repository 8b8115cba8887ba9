package zkbench_test

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/zkbench"
	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

// testIterations is how many iterations the tests run each workload for,
// through testing.Benchmark.
const testIterations = 20

// TestMain makes testing.Benchmark, which the tests use to run workloads,
// run a fixed, small number of iterations instead of a second's worth —
// unless this is a benchmark run, whose -benchtime is the user's.
func TestMain(m *testing.M) {
	flag.Parse()
	if flag.Lookup("test.bench").Value.String() == "" {
		if err := flag.Set("test.benchtime", strconv.Itoa(testIterations)+"x"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}

// fakeWorkloads are the workloads every target runs, with the metrics
// each must report.
var fakeWorkloads = []struct {
	name     string
	workload func(*testing.B, *zkbench.Target)
	metrics  []string
}{
	{"Create", zkbench.Create, nil},
	{"Get", zkbench.Get, nil},
	{"Set", zkbench.Set, nil},
	{"Delete", zkbench.Delete, nil},
	{"Children", zkbench.Children, nil},
	{"Multi", zkbench.Multi, nil},
	{"CreateDelete", zkbench.CreateDelete, nil},
	{"Reads/goroutines=1", func(b *testing.B, t *zkbench.Target) { zkbench.Reads(b, t, 1) }, nil},
	{"Reads/goroutines=16", func(b *testing.B, t *zkbench.Target) { zkbench.Reads(b, t, 16) }, nil},
	{"ReadWriteMix/goroutines=16", func(b *testing.B, t *zkbench.Target) { zkbench.ReadWriteMix(b, t, 16) }, nil},
	{"LockUncontended", zkbench.LockUncontended, []string{"ops/acquire", "events/release"}},
	{"LockRequests", zkbench.LockRequests, nil},
	{"LockHandoff/waiters=1", func(b *testing.B, t *zkbench.Target) { zkbench.LockHandoff(b, t, 1) },
		[]string{"ops/acquire", "events/release", "wakeups/release"}},
	{"LockHandoff/waiters=100", func(b *testing.B, t *zkbench.Target) { zkbench.LockHandoff(b, t, 100) },
		[]string{"ops/acquire", "events/release", "wakeups/release"}},
	{"RWReadUncontended", zkbench.RWReadUncontended, []string{"ops/acquire", "events/release"}},
	{"RWWriteUncontended", zkbench.RWWriteUncontended, []string{"ops/acquire", "events/release"}},
	{"RWLockHandoff/readers=10", func(b *testing.B, t *zkbench.Target) { zkbench.RWLockHandoff(b, t, 10) },
		[]string{"ops/acquire", "events/release", "wakeups/release", "wakeups/write-release", "wakeups/read-release"}},
}

// runWorkload runs workload through testing.Benchmark and fails t unless
// it ran every iteration and reported its metrics.
func runWorkload(t *testing.T, workload func(*testing.B), metrics []string) testing.BenchmarkResult {
	t.Helper()
	r := testing.Benchmark(workload)
	// testing.Benchmark swallows the benchmark's own messages; a failed
	// or skipped run shows as a result with no iterations.
	if r.N != testIterations {
		t.Fatalf("ran %d iterations, want %d: the workload failed or skipped (run it with go test -bench to see why)", r.N, testIterations)
	}
	for _, m := range metrics {
		if _, ok := r.Extra[m]; !ok {
			t.Errorf("metric %q not reported; got %v", m, r.Extra)
		}
	}
	return r
}

func TestWorkloadsRunOnTheFake(t *testing.T) {
	for _, w := range fakeWorkloads {
		t.Run(w.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				runWorkload(t, func(b *testing.B) { w.workload(b, zkbench.Fake(b)) }, w.metrics)
			})
		})
	}
}

// The lock's own documentation gives its request counts: Lock then Unlock
// uncontended is a create, a GetW on the own node, a listing and the
// Delete; each handoff adds the next holder's listing after its wakeup and
// the GetW with which the old holder, queueing again, parks. A release
// wakes exactly one waiter, however many wait. The real ensemble must
// agree with the fake on all of it, watch events included.
func checkLockMetrics(t *testing.T, target func(testing.TB) *zkbench.Target, inBubble bool) {
	check := func(t *testing.T, r testing.BenchmarkResult, metric string, want float64) {
		t.Helper()
		if got := r.Extra[metric]; got != want {
			t.Errorf("%s = %v, want %v", metric, got, want)
		}
	}
	run := func(t *testing.T, body func(t *testing.T)) {
		if inBubble {
			synctest.Test(t, body)
		} else {
			body(t)
		}
	}
	t.Run("uncontended", func(t *testing.T) {
		run(t, func(t *testing.T) {
			r := runWorkload(t, func(b *testing.B) { zkbench.LockUncontended(b, target(b)) }, nil)
			check(t, r, "ops/acquire", 4)
			// The holder's watch on its own node fires as Unlock deletes it.
			check(t, r, "events/release", 1)
		})
	})
	for _, waiters := range []int{1, 2, 10, 100} {
		t.Run(fmt.Sprintf("waiters=%d", waiters), func(t *testing.T) {
			run(t, func(t *testing.T) {
				r := runWorkload(t, func(b *testing.B) { zkbench.LockHandoff(b, target(b), waiters) }, nil)
				check(t, r, "ops/acquire", 6)
				check(t, r, "wakeups/release", 1)
				// The next holder's watch and the old holder's own.
				check(t, r, "events/release", 2)
			})
		})
	}
}

func TestLockMetricsOnTheFake(t *testing.T) {
	checkLockMetrics(t, func(tb testing.TB) *zkbench.Target { return zkbench.Fake(tb) }, true)
}

func TestLockMetricsOnTheEnsemble(t *testing.T) {
	ensemble.Servers(t)
	checkLockMetrics(t, zkbench.Real, false)
}

func TestZnodeMemoryOnTheFake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const znodes = 5000
		r := runWorkload(t, func(b *testing.B) { zkbench.ZnodeMemory(b, zkbench.Fake(b), znodes) }, []string{"B/znode", "ns/znode"})
		// A znode holds at least its path and its stat; a kilobyte and more
		// for an empty znode would mean the measurement counts more than
		// the tree.
		if perZnode := r.Extra["B/znode"]; perZnode < 64 || perZnode > 2048 {
			t.Errorf("B/znode = %v, want between 64 and 2048", perZnode)
		}
	})
}

func TestZnodeMemorySkipsTheEnsemble(t *testing.T) {
	ensemble.Servers(t)
	r := testing.Benchmark(func(b *testing.B) { zkbench.ZnodeMemory(b, zkbench.Real(b), 10) })
	if r.N != 0 {
		t.Errorf("ran %d iterations on the ensemble, want it skipped", r.N)
	}
}

// TestWorkloadsRunOnTheEnsemble runs every workload a few times against
// the ensemble in ZK_SERVERS, and checks that each Target removed its
// directory afterwards.
func TestWorkloadsRunOnTheEnsemble(t *testing.T) {
	servers := ensemble.Servers(t)
	for _, w := range fakeWorkloads {
		t.Run(w.name, func(t *testing.T) {
			runWorkload(t, func(b *testing.B) { w.workload(b, zkbench.Real(b)) }, w.metrics)
		})
	}

	conn, _, err := zk.Connect(servers, 4*time.Second, zk.WithLogger(discardLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	children, _, err := conn.Children(zkbench.RootPath)
	if err == zk.ErrNoNode {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	mine := fmt.Sprintf("real-%d-", os.Getpid())
	for _, c := range children {
		if strings.HasPrefix(c, mine) {
			t.Errorf("%s/%s was left behind", zkbench.RootPath, c)
		}
	}
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}
