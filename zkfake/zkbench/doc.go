// Package zkbench holds benchmark workloads that run unchanged on the
// in-memory fake (zkfake) and on a real ZooKeeper ensemble, so that the two
// can be compared side by side.
//
// Each workload is a function of a *testing.B and a *Target. A Target opens
// sessions as zktest.Conn values and gives the workload a fresh persistent
// directory to work in; Fake makes one on a new zkfake.Server (event log
// off), Real one on the ensemble named in ZK_SERVERS (skipping the benchmark
// when it is unset). The package's benchmarks run every workload as two
// sub-benchmarks, "fake" and "real", always in that position of the name:
//
//	BenchmarkGet/fake
//	BenchmarkLockHandoff/real/waiters=1000
//
// so `-bench ./real` selects the real side alone. cmd/zkbench runs both
// and prints one Markdown table with the ratio of real to fake.
//
// The workloads:
//
//   - Create, Get, Set, Delete, Children, Multi, CreateDelete: the latency of
//     one request of each kind from one session.
//   - Reads and ReadWriteMix: throughput of Get alone, and of 70% Get with
//     30% Set, from n goroutines with a session each.
//   - LockUncontended: recipe.Mutex Lock and Unlock with nobody else around.
//   - LockRequests: the four requests of an uncontended Lock and Unlock,
//     sent without the recipe.
//   - LockHandoff: n waiters queued on a recipe.Mutex; every iteration the
//     holder releases and the next waiter acquires, while the old holder
//     queues again at the back, so the queue stays n long.
//   - RWReadUncontended and RWWriteUncontended: either side of a
//     recipe.RWMutex, taken and released with nobody else around.
//   - RWLockHandoff: a recipe.RWMutex handed from a writer to n readers
//     and on to the next writer, the queue formed again off the clock.
//   - ZnodeMemory: the fake's heap per znode in a tree of many znodes.
//
// Besides ns/op the workloads report their own metrics with b.ReportMetric:
// ZooKeeper requests per acquisition ("ops/acquire"), watch events delivered
// per release ("events/release"), waiters woken per release
// ("wakeups/release"; RWLockHandoff also per write and per read release,
// "wakeups/write-release" and "wakeups/read-release"), and heap bytes and
// build time per znode ("B/znode", "ns/znode").
//
// The fuzz harness's speed (cases per second) is not a benchmark here:
// fuzz.Run must run in a program of its own, so cmd/zkbench times it.
package zkbench
