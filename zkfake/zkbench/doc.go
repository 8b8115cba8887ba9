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
//
// `make bench` runs cmd/zkbench and writes its table, with the machine and
// the date, to testdata/bench.md; with ZK_SERVERS set the real column is
// filled too.
//
// # Reading the numbers
//
// On a small shared machine the same benchmark moves a lot from one run to
// the next, on both sides (the ensemble's Set took 0.45ms in one run and
// 4.2ms in another, the fake's 0.65µs and 1.5µs), and the ratios move with
// them; cmd/zkbench alternates the sides round after round and reports
// medians for that reason. Against the test ensemble (.ci/ensemble, no
// fsync, the C1 compiler) the ratio of a single write lay between about
// 570× and 2,700× across runs; against an ensemble that runs as production
// does (ZKSIM_ENSEMBLE_DURABLE=1 .ci/ensemble up: fsync on every
// transaction, C2), every write was at least 2,900× faster on the fake
// (2026-12-01, medians of 3 runs: create 1.58µs against 4.71ms, get 297ns
// against 719µs, set 683ns against 3.66ms, delete 1.09µs against 6.99ms).
//
// Where the lock's time goes: LockRequests sends an uncontended Lock and
// Unlock's four requests itself, with no recipe around them — 2.3µs and 7
// allocations on the fake, against LockUncontended's 8.1µs and 11
// (2026-12-02). The 4 allocations more are the node's name with its new
// GUID, the hold, and two goroutines; the time is nearly all those two
// goroutines: one follows the hold, so that Lost closes and the listener
// hears at once, and one sends the release's Delete, so that Unlock keeps
// to its retry timeout and UnlockContext to its deadline while a request
// hangs in a partition. Starting a goroutine wakes the machine's other,
// idle core, which cost the 2-core VM measured 4-6µs a time. Getting Lock
// and Unlock within 2× of their requests would mean dropping both
// goroutines, and with them a documented behaviour.
//
// LockHandoff costs 6 requests per acquisition and wakes exactly one
// waiter per release from 1 to 1,000 waiters, on the fake and on the
// ensemble alike; the second watch event per release is the releaser's own
// watch on its node, which Lost relies on. With 1,000 waiters a handoff
// costs the fake about twice a handoff with one (55µs against 28µs): a
// listed directory keeps its children sorted, packed into one string, and
// the recipe finds its predecessor in one pass over the listing; what is
// left is the listing itself, which the woken waiter reads whole, on the
// fake as on ZooKeeper.
package zkbench
