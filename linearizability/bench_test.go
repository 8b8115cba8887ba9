package linearizability_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zksim/zksim/linearizability"
)

// The benchmarks measure check time against history length and the number
// of operations with an unknown outcome, on concurrent histories from the
// simulators (five clients for the lock, four for znodes, with crashes,
// session expiries and stale reads). Run them with
//
//	go test ./linearizability -run '^$' -bench Check
//
// ms/check is the time one check takes; ops and unknown describe the
// history.

var benchLengths = []int{100, 1000, 10000}
var benchUnknowns = []int{0, 5, 20}

func BenchmarkCheckMutex(b *testing.B) {
	for _, n := range benchLengths {
		for _, unknown := range benchUnknowns {
			h := simulateMutex(1, n, unknown)
			b.Run(fmt.Sprintf("ops=%d/unknown=%d", n, unknown), func(b *testing.B) {
				benchmarkCheck(b, h, func(h linearizability.History) (linearizability.Result, error) {
					return linearizability.CheckMutex(h, time.Minute)
				})
			})
		}
	}
}

func BenchmarkCheckZnodes(b *testing.B) {
	for _, n := range benchLengths {
		for _, unknown := range benchUnknowns {
			h, initial := simulateZnodes(1, n, unknown)
			b.Run(fmt.Sprintf("ops=%d/unknown=%d", n, unknown), func(b *testing.B) {
				benchmarkCheck(b, h, func(h linearizability.History) (linearizability.Result, error) {
					return linearizability.CheckZnodes(h, time.Minute, initial...)
				})
			})
		}
	}
}

func benchmarkCheck(b *testing.B, h linearizability.History, check func(linearizability.History) (linearizability.Result, error)) {
	var res linearizability.Result
	for b.Loop() {
		var err error
		res, err = check(h)
		if err != nil {
			b.Fatal(err)
		}
		if res.Outcome != linearizability.Ok {
			b.Fatalf("got %v, want Ok", res)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/check")
	b.ReportMetric(float64(res.Operations), "ops")
	b.ReportMetric(float64(res.UnknownOperations), "unknown")
}
