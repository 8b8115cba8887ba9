package fakelog_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/linearizability/fakelog"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/zktest"
	"github.com/zksim/zksim/zkfake/zktest/fake"
)

// BenchmarkCheckRecorded measures how long CheckZnodes takes on histories
// recorded from the fake with lost requests and replies, partitions,
// expiries and crashes, raw and settled with the fake's log. Run it with
//
//	go test ./linearizability/fakelog -run '^$' -bench CheckRecorded
//
// ms/settle is the time settling takes: reading the log and aligning it
// with the history. ms/check is the time one check takes; a check gives up after 30s, and
// timedout is then 1. ops and unknown describe the history as checked,
// unknown reads left out.
//
// A benchmark cannot run in a synctest bubble, so the histories are
// recorded in real time, on a fake with a 10ms tick (200ms session
// timeouts); reconnect rounds still take a second, so recording takes a few
// seconds. Real concurrency makes each recording different: the numbers
// vary from run to run.
func BenchmarkCheckRecorded(b *testing.B) {
	for _, n := range []int{100, 1000} {
		rec, log := recordForBenchmark(b, n)
		raw := rec.History()
		settled, err := rec.Recorder.Settle(fakelog.NewTruth(log, raw))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("ops=%d/settle", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := rec.Recorder.Settle(fakelog.NewTruth(log, rec.History())); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/settle")
			b.ReportMetric(float64(len(log)), "records")
		})
		for _, h := range []struct {
			name    string
			history linearizability.History
		}{{"raw", raw}, {"settled", settled}} {
			b.Run(fmt.Sprintf("ops=%d/%s", n, h.name), func(b *testing.B) {
				var res linearizability.Result
				for b.Loop() {
					var err error
					if res, err = linearizability.CheckZnodes(h.history, 30*time.Second); err != nil {
						b.Fatal(err)
					}
					if res.Outcome == linearizability.Illegal {
						b.Fatalf("%s history: %v", h.name, res)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/check")
				b.ReportMetric(float64(res.Operations), "ops")
				b.ReportMetric(float64(res.UnknownOperations), "unknown")
				timedOut := 0.0
				if res.Outcome == linearizability.Unknown {
					timedOut = 1
				}
				b.ReportMetric(timedOut, "timedout")
			})
		}
	}
}

// recordForBenchmark records about n operations from four clients on a
// fake, in real time, and returns the recording and the fake's log.
func recordForBenchmark(b *testing.B, n int) (*fakelog.Recording, []zkfake.Record) {
	b.Helper()
	srv := zkfake.NewServer(zkfake.WithSeed(uint64(n)), zkfake.WithTickTime(10*time.Millisecond))
	defer srv.Close()
	admin, _, err := srv.Connect(time.Second)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := admin.Create(base, nil, 0, open); err != nil {
		b.Fatal(err)
	}
	admin.Close()
	srv.LoseRandomReplies(0.03)
	rec, err := fakelog.Record(fakelog.Config{
		Connect: func() (zktest.Conn, error) {
			conn, _, err := srv.Connect(time.Second)
			return conn, err
		},
		Base: base, Clients: 4, Ops: n / 4, Seed: uint64(n),
		Faults: fake.Faults{Server: srv}, FaultRate: 0.01, MaxPartition: 400 * time.Millisecond,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d operations: %+v", n, rec.Stats)
	return rec, srv.Log()
}
