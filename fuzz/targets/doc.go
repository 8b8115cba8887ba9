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
// [Catalogue] lists bugs of ZooKeeper recipes from the public record,
// each ported as the recipe was when it had the bug, in a file named
// after its upstream id, with the record's account of it ([KnownBug])
// and the campaign that finds it (go run ./cmd/zkfuzz
// -recipe=ZOOKEEPER-2931). TestCatalogue in package fuzz holds every
// entry to being found with every seed of twenty (two in the fast tier,
// one of 60 cases under the race detector),
// by one of its Detectors with its Mark in the story; cmd/zkfuzz hunts
// an entry with fuzz.OnlyFindings(b.Accepts), so that its story is the
// entry's bug and not another the port has, and `zkfuzz -track-record`
// measures them all for the README's track record.
// TestCatalogueSameSeedSameHistory holds every entry's hunt but one to
// telling a seed's cases the same way twice, past their findings.
// samuel/go-zookeeper#229's, over real go-zookeeper clients, is not held:
// a request of a connection that fails there fails as sent or as unsent,
// by the scheduler's choice among go-zookeeper's own goroutines; its
// track record is the same run after run.
//
// Ports of Java recipes stand on monitor.go (a Java monitor made of
// channels) and on small ports of their client: curatorframework.go
// (Curator's event thread, background operations, retry loop and
// connection states) and curator2.go (Curator 2.x's lock and protected
// create); kazoo ports on catalogue_kazoo.go (KazooClient and KazooRetry).
// The entries:
//   - ZOOKEEPER-2931: ZooKeeper's own WriteLock ordered its queue by the
//     node's prefix, x-<session id>, before its sequence number, so a
//     contender with a lower session id than the holder's takes the lock
//     too (mutual-exclusion, with no fault drawn). The port also shows a
//     WriteLock bug the fix left, which shayhatsor/zookeeper#26 (below)
//     hunts.
//   - samuel/go-zookeeper#229: go-zookeeper's zk.Lock, unchanged, over
//     real clients, leaves its node when an error follows the create;
//     the client's next Lock waits behind it for ever (liveness or leak;
//     zk.Lock/orphan is the same campaign).
//   - CURATOR-315 and CURATOR-335: Curator's InterProcessSemaphoreV2
//     (curator2semaphore.go, over the Curator 2.x client, retry loop,
//     protected create and InterProcessMutex of curator2.go), handed to
//     the Semaphore target, each with internalAcquire1Lease as it was.
//     In 2.10.0 a lease joins the acquire's builder at its create, so a
//     session expired before the listing leaves a dead lease first in
//     the builder and a live one nobody holds (CURATOR-315: leak); the
//     fix returned the lease on every path but an exception from that
//     listing, which orphans the node until the session ends
//     (CURATOR-335, on master only until 2.11.0: leak). Both ports also
//     show traits of every Curator 2.x: a lease closed after its session
//     expired closes without a word (model), an inner mutex's abandoned
//     wait leaves its watch armed (herd), and its queue is sorted as
//     text past the int32 wrap.
//   - python-zk/kazoo#730, #732, #649, #429 and #170: kazoo's Lock,
//     ReadLock/WriteLock and Semaphore, each at the version before its
//     fix (or the current one, where it is open), over a port of as much
//     of KazooClient and KazooRetry as they call (catalogue_kazoo.go):
//     its retry of ConnectionLoss and SessionExpired, its
//     SUSPENDED/LOST/ CONNECTED listeners, read from the Conn, and what
//     each version did with its watchers when the connection went. Lock
//     2.9.0 compares the sequence numbers as strings, so past the int32
//     wrap each new contender takes the lock (#730: mutual-exclusion,
//     with no fault drawn); its _best_effort_cleanup swallows a delete
//     lost with the connection and leaves a node nobody deletes ahead of
//     every contender (#732, open: liveness or leak). ReadLock 2.8.0
//     waits for the last writer of the whole queue, one behind it too,
//     which waits for the reader (#649: liveness, no fault). The
//     Semaphore of 2.2.1 takes a Lock on <path>-__lock__ first, whose
//     swallowed cleanup leaves a zombie node there that shuts every
//     acquirer out (#429: liveness or leak). Lock 1.3.1 waits on a watch
//     its client drops when the connection goes, and nothing wakes it
//     (#170: liveness, after an expiry).
//   - go-zookeeper/zk#65: zk.Lock as it was in v1.0.2, over real
//     clients. Its parseSeq split the node's name on "-", losing the
//     sign of a sequence number past the int32 wrap, so later nodes read
//     lower and each new contender takes the lock (mutual-exclusion, no
//     fault drawn). v1.0.3's fix left the search for the node ahead
//     among numbers above -1 (zk.Lock/negative-sequence).
//   - CURATOR-79: Curator 2.6.0's InterProcessMutex (curator79.go, over
//     curator2.go's client and lock loop) with the create path of 2.6.0,
//     whose ZooKeeper calls an interrupt ends while the request goes on.
//     A Lock cancelled, or past its deadline, while its protected create
//     waits for the reply throws InterruptedException, and the protected
//     create looks for its node to delete after a connection loss alone:
//     the node, applied all the same, stays ahead of every contender
//     (liveness or leak, with a cancel or a deadline alone).
//   - python-zk/kazoo#58: kazoo 1.0's DataWatch with allow_missing_node
//     (kazoo58.go, over catalogue_kazoo.go's client), described to the
//     NodeDataWatch target: a deletion left its prior data in place, so
//     the exists watcher took the node's re-creation for a get watch
//     already set and did nothing; the function's last word stays "no
//     node" for good (convergence, no fault drawn).
//   - python-zk/kazoo#177: kazoo's Queue as pull request #177 first had
//     it (kazoo177.go, over kazoo 1.3.1's client), described to the
//     PlainQueue target (one consumer, the model
//     linearizability.QueueModel()): _inner_get popped the first child
//     of its kept listing before reading and deleting it, so a retry
//     after a lost request takes the second while the first stays in the
//     queue (model, lost requests alone). Fixed before the merge
//     (b1462ef): no release had it.
//   - python-zk/kazoo#359: kazoo 2.0's Queue (kazoo359.go, on
//     kazoo177.go's port), described to the [SharedQueue] target, two
//     consumers: a consumer whose head another took keeps its listing
//     across its retry, and asks for the gone node again and again, its
//     backoff growing (polling, no fault drawn).
//   - shayhatsor/zookeeper#26: ZooKeeper's WriteLock since the fix of
//     ZOOKEEPER-2931 (writelock26.go, zookeeper2931.go's port with the
//     sequence number compared first) still returns from lock() without
//     a watch when the node ahead goes between its listing and its
//     exists: the lock is never granted (liveness, no fault drawn). The
//     report is against the recipe's C# port, and names the Java one
//     too.
//   - python-zk/kazoo#490 and CURATOR-107: kazoo's Lock before 2.5.0 and
//     Curator's InterProcessMutex before May 2014 watched the node ahead
//     with exists, which sets a creation watch on a node already gone;
//     the watch stays for the session's life (leak of watches, no fault
//     drawn).
//   - CURATOR-604: Curator's InterProcessMutex from 4.2.0 on
//     (curator604.go, curator2.go's port with ProtectedMode's session
//     check and ConnectionStateManager's injected session expiration):
//     after a quorum lost for longer than the session timeout, Curator
//     gives its session up on its own (the harness's
//     Conn.AbandonSession) while the server keeps it; the lock loop's
//     listing, retried on the new session, finds the old session's
//     node first and holds the lock on it, and when that session
//     expires the next contender holds it too (mutual exclusion, quorum
//     losses alone). Open upstream.
//   - CURATOR-233: Curator's DistributedDoubleBarrier (curator233.go),
//     described to the [DoubleBarrier] target: leave breaks out of its
//     loop when one child remains, whoever it is, and returns while
//     another member is still in the barrier (model: the barrier model's
//     "left" before everyone departed; no fault drawn). Still in
//     Curator.
//   - CURATOR-258: Curator 2.9.0's PersistentEphemeralNode, a group
//     member's node, described to the [GroupMembership] target: a member
//     restarted before its old session expired sets its data on the old
//     node, and its watcher drops its own NodeDataChanged with the
//     watch; when the old session expires the node is gone for good
//     (state-report, a crash alone).
//   - CURATOR-391: Curator 2.11.1's PathChildrenCache, described to the
//     [ChildrenCache] target: a child deleted and made again while the
//     cache is disconnected comes back at version 0, and the cache,
//     which compares versions, tells its listener nothing (convergence,
//     one partition).
//   - python-zk/kazoo#366: kazoo 2.5.0's LockingQueue, described to the
//     [LockingQueue] target: a consumer whose entry another consumed
//     between its listing and its take keeps the taken node it made for
//     nothing (leak, no fault drawn).
//   - CURATOR-696: Curator's LeaderLatch as at 3468ee91, released in
//     5.6.0 (curator696.go, on curatorlatch.go's port of LeaderLatch and
//     its background protected create, over curatorframework.go with
//     ConnectionStateManager's injected session expiration), described to
//     a LeaderLatch target of its own (leaderlatch.go: Campaign is start
//     and await, Write the leader's fenced write, Close its resignation;
//     the election model, and a check that holds a leader to its node).
//     After a quorum lost for longer than the session timeout, Curator
//     gives its session up on its own while the server keeps it; on
//     RECONNECTED the latch lists the children, finds its node, the old
//     session's, first, and leads through it; when the server expires the
//     old session the node goes, and the latch, which watches nothing as
//     a leader, leads on beside the next candidate (state-report, quorum
//     losses alone).
//   - CURATOR-460: Curator 4.0.1's LeaderLatch on the same port, its client
//     built with SessionConnectionStateErrorPolicy and
//     StandardConnectionHandlingPolicy(30) (curator460.go), over 4.0.1's
//     ConnectionStateManager, whose state thread injects the expiration
//     only when its queue poll times out, at the whole session timeout,
//     whatever the percent. The latch keeps its leadership while
//     SUSPENDED and gives it up on LOST, which comes five thirds of the
//     session timeout after the partition began, where the server expired
//     the session at one: the cut-off latch says it leads beside the next
//     candidate (state-report, partitions alone).
//   - CURATOR-498: Curator 4.1.0's LeaderLatch on the same port, its
//     protected create as it was before 4.2.0's ProtectedMode
//     (curator498.go): the create is applied and the quorum goes down with
//     its reply; Curator gives the session up while the server keeps it,
//     and the create's retry, in the new session, finds the old session's
//     node by its protected id and takes it as its own; when the server
//     expires the old session the latch leads on through a deleted node
//     (state-report, lost replies and quorum losses alone). In
//     curator2.go's lock, which has the same create, the same schedule
//     reaches CURATOR-604's double hold first.
//   - CURATOR-653: Curator 5.3.0's LeaderLatch on the same port
//     (curator653.go): a latch that leads replaces its node with a newer
//     one, deleting the node it leads through, and checkLeadership, which
//     finds the newer node behind another candidate's, keeps the
//     leadership. The report's race is between two of Curator's threads
//     with no request between them, which the harness does not draw; it
//     reaches the same state through two of the latch's resets: the first
//     reset's create callback lands and the latch leads through its node;
//     the second's lands next and replaces that node (state-report,
//     session expiries alone).
//
// Not in the catalogue, and why:
//   - CURATOR-620 and CURATOR-518 are races between two of Curator's
//     threads with no request between them, which a harness that
//     interleaves at requests and events cannot draw. (CURATOR-620's
//     outcome, a leader whose node its own reset deleted, is the state
//     the CURATOR-653 entry reaches through requests.)
//   - CURATOR-678's release retries its delete in the background until it
//     succeeds, and no faithful port shows a lasting harm.
//   - CURATOR-536 (a double barrier's leave that spins past its deadline)
//     needs a rule that holds a call to its deadline by the requests it
//     makes past it.
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
// them (remeasured 2026-12-04); the wall time is that of
// `go run ./cmd/zkfuzz -recipe=NAME -seed=1` on 2 cores, which reports the
// first finding whatever its detector and includes shrinking, capped at
// 20s. `make bench` measures the counts over 5 seeds too, into
// testdata/bench.md.
//
// The lock mutants:
//
//	mutant                 what is wrong                                        detector          cases med/max  wall
//	herd                   waiters watch the children list                      herd              2 / 6          2.3s
//	wrong-watch            watches a wrong path                                 liveness          1 / 2          0.7s (found first by leak)
//	no-relist              takes the predecessor's deletion as the lock         mutual-exclusion  7 / 44         19.7s
//	whole-name-order       orders protected names by the whole name             mutual-exclusion  2 / 4          0.5s
//	check-then-create      check-then-create of a plain node                    liveness          3 / 29         3.5s
//	timed-wait             a timed wait reports "acquired" when it times out    mutual-exclusion  2 / 14         9.5s
//	wrong-unlock           Unlock deletes the wrong node                        mutual-exclusion  53.5 / 131     9.5s
//	plain-retry            retries a plain create after a lost reply            liveness          17.5 / 47      4.5s
//	spin                   polls instead of watching                            polling           4 / 16         1.8s
//	reenter-failed-unlock  a failed Unlock keeps the hold, Lock re-enters it    mutual-exclusion  34.5 / 160     7.7s
//	sequence-wrap          reads the last ten characters past the int32 wrap    mutual-exclusion  6 / 25         0.6s
//	closed-retry           retries a closed Conn as a lost connection           liveness          10 / 31        12.7s
//	forget-guid            forgets a lost create's GUID after one listing       liveness          205.5 / 620    20.1s
//	reaper-gives-up        the background deletion of a failed release or Lock  liveness          274 / 2529     20.3s
//	                       gives up after a minute
//	unlock-trusts-no-node  an Unlock that finds no node calls it released       mutual-exclusion  498 / 844      1.9s
//	listing-order          takes the listing's order for the queue's            mutual-exclusion  2 / 7          0.1s
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
//	election-herd                 candidates watch the directory's children           herd          17 / 71        15.5s
//	election-exists               a candidate leads as soon as its node exists        model         2 / 12         22.4s
//	election-split-brain          a leader never learns its session expired           state-report  36.5 / 201     6.0s
//	election-leads-until-expired  a leader leads until it hears its session expired   state-report  74 / 414       6.2s
//	                              (CURATOR-460)
//	election-stale-observer       an observer stops watching after the first change   convergence   4 / 29         0.3s
//	first-to-create               waits for a node it made itself                     liveness      7.5 / 36       —
//
// The read/write lock and semaphore mutants break the queue lock's
// read/write variant and a semaphore without the acquirers' lock;
// TestSoundQueueRWMutex holds the unbroken variant to the same campaign:
//
//	mutant                         what is wrong                                             detector  cases med/max  wall
//	rw-reader-waits-all            a reader waits for the node just ahead even when a reader liveness  28 / 115       8.7s
//	rw-writer-ignores-readers      a writer waits for writers only                           model     2 / 5          1.1s
//	rw-readers-watch-first-writer  readers watch the first writer, not the nearest           herd      7.5 / 84       3.2s
//	sem-count-then-create          counts the leases, then creates its own without counting  model     7 / 25         1.3s
//	sem-watch-directory            waiters keep their nodes and watch the whole directory    herd      12 / 97        6.1s (found first by leak)
package targets
