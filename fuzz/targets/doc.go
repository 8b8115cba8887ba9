// Package targets holds the fuzz harness's built-in targets: the
// project's leader election, read/write lock and semaphore described to
// the harness (Election, RWMutex, Semaphore, each taking any
// implementation of its interface, the recipe package's or yours), and
// the catalogue of mutants, deliberately broken recipes that every
// campaign must find (Mutants).
//
// It is written against package fuzz's exported API only, exactly as a
// user describes a recipe of their own with fuzz.Recipe: whatever a
// built-in target needs of the harness, a user's target has too. The one
// target that stays in the engine is fuzz.Lock, the loop for any Locker,
// whose books (the fenced critical section, the queue's order for the herd
// rule, the holds in doubt) the engine keeps itself.
//
//	fuzz.Check(t, targets.Election(targets.RecipeElection))
//
// The mutants share one small lock, QueueLock, written the way people
// write the ZooKeeper lock recipe, each with one classic mistake; the
// election and read/write lock mutants are built on it or on the recipe
// package's own recipes. Mutant.Detector names the detector that must
// find each; cmd/zkfuzz runs any of them by name (-recipe=NAME).
//
// # Known bugs
//
// [Catalogue] lists bugs of ZooKeeper recipes from the public record, each
// ported as the recipe was when it had the bug, in a file named after its
// upstream id, with the record's account of it ([KnownBug]) and the
// campaign that finds it (go run ./cmd/zkfuzz -recipe=ZOOKEEPER-2931).
// TestCatalogue in package fuzz holds every entry to being found with
// every seed of twenty (two in the fast tier). The entries:
//   - ZOOKEEPER-2931: ZooKeeper's own WriteLock ordered its queue by the
//     node's prefix, x-<session id>, before its sequence number, so a
//     contender with a lower session id than the holder's takes the lock
//     too (mutual-exclusion, within 17 cases over twenty seeds, with no
//     fault drawn). The port also shows a WriteLock bug the fix left: a
//     waiter whose node ahead goes between its listing and its exists
//     call returns without a watch, and waits for ever (liveness; the
//     current WriteLock has the same loop).
//   - samuel/go-zookeeper#229: go-zookeeper's zk.Lock, unchanged, over
//     real clients, leaves its node when an error follows the create; the
//     client's next Lock waits behind it for ever (liveness or leak,
//     within 51 cases over twenty seeds; zk.Lock/orphan is the same
//     campaign).
//
// # The recipes
//
// [Election] with [RecipeElection] (-recipe=election) is recipe.Election,
// or any [Elector], described as a Recipe (election.go, the example to
// copy): client 0 follows Observe and reads its latest value; the others
// Campaign, write to the fenced resource with their token once elected,
// Resign, and read Leader. The model is linearizability.ElectionModel(). A
// candidate's Check holds it to its word: once its client is on a new
// session, the one it was elected in expired, it must stop saying it leads
// within a second (room for recipe.Election's 100ms poll of its Conn), nor
// may it say it leads while its connection has been down for longer than
// its session timeout. The observer's Check holds its stream to never going
// back to an older leader, across sessions too, and its Settled compares
// the last leader its stream told of with the leader there is. The harness
// showed what the history must say of a campaign: a Campaign that succeeds
// may still have led "in all but name" before, through a twin of its node
// (a create whose reply was lost, applied after all, first in line until
// the campaign found and deleted it), which an observer may see: its
// sessions' outcomes are open within the call.
//
// [RWMutex] with [RecipeRWMutex] (-recipe=rwmutex) and [Semaphore] with
// [RecipeSemaphore] (-recipe=semaphore) are Recipes too (rwmutex.go,
// semaphore.go). Read/write clients take one side at a time (RLock or
// Lock), a writer writes to the fenced resource with its token, and either
// releases; the model is linearizability.RWMutexModel(). Semaphore clients
// Acquire or TryAcquire a lease of two and Release it; the model is
// linearizability.SemaphoreModel(). Both hold a holder to its session as
// the election does (state-report), and the read/write lock's Stalled
// holds a waiting reader to its queue: a reader that has waited ten
// seconds on a watch, connected and on a member that does not lag, with no
// writer ahead of its node, waits for nothing (liveness). The herd rule of
// a Recipe lets a release wake every waiter it unblocks — a writer's
// release wakes every reader behind it — but no waiter it does not: a
// change that deleted the queue's first node, or a node deleted in a call
// that releases (fuzz.Op.Releases), and woke two waiters of which one set a
// watch again before its call returned, is a herd. A waiting writer that
// gives up may still wake readers that another writer ahead of them
// blocks: not a herd.
//
// # Mutants
//
// [Mutants] are deliberately broken recipes, each with the detector that
// must find it; `go run ./cmd/zkfuzz -list` lists them and -recipe=NAME
// fuzzes one. A mutant whose mistake also trips another detector (a queue
// ordered wrongly deadlocks as often as it lets two in) names it in
// [Mutant].Also. The counts below are cases to the first finding by the
// mutant's own detector over 20 seeds, at most 3,000 each, as
// `ZKFUZZ_TABLE_SEEDS=20 go test ./fuzz -run TestMutantTable -v` prints
// them (remeasured 2026-12-02); the wall time is that of
// `go run ./cmd/zkfuzz -recipe=NAME -seed=1` on 2 cores, which reports the
// first finding whatever its detector and includes shrinking, capped at
// 20s. `make bench` measures the counts over 5 seeds too, into
// testdata/bench.md.
//
// The lock mutants:
//
//	mutant                 what is wrong                                        detector          cases med/max  wall
//	herd                   waiters watch the children list                      herd              3 / 10         6.4s
//	wrong-watch            watches a wrong path                                 liveness          1 / 2          0.6s
//	no-relist              takes the predecessor's deletion as the lock         mutual-exclusion  9 / 51         20.1s
//	whole-name-order       orders protected names by the whole name             mutual-exclusion  2 / 4          0.5s
//	check-then-create      check-then-create of a plain node                    liveness          3.5 / 28       3.1s
//	timed-wait             a timed wait reports "acquired" when it times out    mutual-exclusion  5.5 / 21       8.4s
//	wrong-unlock           Unlock deletes the wrong node                        mutual-exclusion  43.5 / 125     18.9s
//	plain-retry            retries a plain create after a lost reply            liveness          9.5 / 54       9.1s
//	spin                   polls instead of watching                            herd              6.5 / 35       3.3s
//	reenter-failed-unlock  a failed Unlock keeps the hold, Lock re-enters it    mutual-exclusion  15.5 / 49      20.1s
//	sequence-wrap          reads the last ten characters past the int32 wrap    mutual-exclusion  8.5 / 25       0.7s
//	closed-retry           retries a closed Conn as a lost connection           liveness          8.5 / 29       4.3s
//	forget-guid            forgets a lost create's GUID after one listing       liveness          57 / 291       11.2s
//	reaper-gives-up        the background deletion of a failed release or Lock  liveness          349 / 1394     21.2s
//	                       gives up after a minute
//	unlock-trusts-no-node  an Unlock that finds no node calls it released       mutual-exclusion  408.5 / 1907   2.1s
//	listing-order          takes the listing's order for the queue's            mutual-exclusion  3 / 8          11.3s
//
// The last seven are recipe.Mutex's own old defects put back into the
// queue lock the mutants share (reenter-failed-unlock to
// unlock-trusts-no-node) and a lock that trusts the listing's order. The
// mutant locks (queuelock.go, nodelock.go) keep their own small helpers (pause, a bounded
// call, a retry loop) beside the recipe's, on purpose: they are
// independent locks, written as another team would write them, and sharing
// the recipe's code would make a mutant inherit the very fixes and faults
// it is there to differ by.
//
// The election mutants, and the first-to-create example of package fuzz's
// documentation (a recipe of a user's own, measured as the mutants are):
//
//	mutant                        what is wrong                                       detector      cases med/max  wall
//	election-herd                 candidates watch the directory's children           herd          8.5 / 51       17.6s
//	election-exists               a candidate leads as soon as its node exists        model         3.5 / 12       1.5s
//	election-split-brain          a leader never learns its session expired           state-report  70 / 140       4.2s (found first by model)
//	election-leads-until-expired  a leader leads until it hears its session expired   state-report  122.5 / 546    4.7s
//	                              (CURATOR-460)
//	election-stale-observer       an observer stops watching after the first change   convergence   6 / 29         0.2s
//	first-to-create               waits for a node it made itself                     liveness      7 / 36         —
//
// The read/write lock and semaphore mutants break the queue lock's
// read/write variant and a semaphore without the acquirers' lock;
// TestSoundQueueRWMutex holds the unbroken variant to the same campaign:
//
//	mutant                         what is wrong                                             detector  cases med/max  wall
//	rw-reader-waits-all            a reader waits for the node just ahead even when a reader liveness  55.5 / 317     20.3s
//	rw-writer-ignores-readers      a writer waits for writers only                           model     1 / 3          3.7s
//	rw-readers-watch-first-writer  readers watch the first writer, not the nearest           herd      23.5 / 61      6.0s
//	sem-count-then-create          counts the leases, then creates its own without counting  model     6.5 / 22       5.0s
//	sem-watch-directory            waiters keep their nodes and watch the whole directory    herd      26 / 176       5.1s
package targets
