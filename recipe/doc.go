// Package recipe holds ZooKeeper coordination recipes — a herd-free mutex
// ([Mutex]) and, built on it, a leader election ([Election]), a read/write
// lock ([RWMutex]) and a counting semaphore ([Semaphore]) — written
// against [Conn], the part of *zk.Conn that they use. Both a real *zk.Conn
// and an in-memory *zkfake.Conn satisfy Conn, so the same recipe runs
// against a real ensemble and against the fake. The same scenarios run on
// both, and package fuzz fuzzes every recipe here (`make fuzz`).
//
// # The lock
//
//	m := recipe.NewMutex(conn, "/locks/orders") // conn: *zk.Conn or *zkfake.Conn
//	if err := m.Lock(ctx); err != nil { ... }
//	defer m.Unlock()
//	tok := m.Token() // the hold's fencing token: its node's czxid
//	select {
//	case <-m.Lost(): // the session expired or the node was deleted: stop
//	case <-work(tok): // pass tok to what you write to, so it can refuse stale holders
//	}
//
// Contenders are ephemeral sequential nodes ordered by their ten-digit
// suffix; each waiter watches only its predecessor, so one watch event
// wakes one waiter per release, and requests per acquisition stay at 6
// from 10 to 1,000 waiters. Creates are protected: a node whose create
// reply was lost is found again by its GUID, and adopted only if the
// current session owns it (CURATOR-498, CURATOR-604). A Mutex is
// reentrant per handle and Lock is cancellable through its ctx.
//
// A connection loss while held is visible: [Mutex.State] is
// [MutexSuspended] (and [WithStateListener] hears it) within a poll of the
// connection, even while a call of the Mutex's own waits on it. An expiry
// closes [Mutex.Lost] and makes Unlock return [ErrLockLost], as does a
// node someone else deleted, even when the watch event that says so
// reaches the Mutex only after Unlock began: Unlock returns nil only for a
// node its own Delete removed, or may have (a Delete whose reply was
// lost; the answer of a Delete it gave up waiting for is read when it
// comes). Nodes it could not delete are deleted in the background for as
// long as the server stays out of reach (a session outlives an ensemble
// without quorum, for minutes if need be), and a create whose reply was
// lost is swept for after a sync (a lagging follower may show its node
// only later).
//
// The states a user sees: [MutexUnlocked], [MutexHeld], [MutexSuspended]
// (the connection dropped; held again if the session resumes),
// [MutexLost] (the node or the session is gone; Lost() is closed) and
// [MutexReleasing]. An Unlock that cannot confirm its Delete during a
// connection loss neither drops the state silently (CURATOR-678) nor keeps
// a hold: the handle is MutexReleasing, Token() is 0, and the release
// stays pending until the next Unlock confirms it, the next Lock or
// TryLock finishes it before queueing afresh (never re-entering it: its
// Delete may apply at any moment and let the next waiter in), the
// background deletion removes the node, or the node's deletion is seen
// (then Lost() closes and the handle is unlocked; the next Unlock returns
// ErrLockLost if every Delete of its own found the node gone). So
// `defer m.Unlock()` that ignores the error leaves no stuck node and no
// phantom hold. On a closed Conn, Lock, TryLock and Unlock fail at once
// with zk.ErrClosing, and the Mutex's goroutines end.
//
// ZooKeeper's sequence counter is a signed int32 that wraps: after
// 2147483647 come -2147483648 and, from -999999999 on, -000000005. The
// Mutex reads the sign and orders contenders as serial numbers on the
// 32-bit counter, so the queue keeps its order across the wrap (as long as
// the oldest contender is fewer than 2^31 creates older than the newest);
// zkfake's Server.SetSequence starts a counter anywhere, to test this in
// one step. The Mutex interoperates with go-zookeeper's zk.Lock and
// kazoo-style __lock__ nodes where their naming allows — below the wrap:
// they do not read the sign, so past it they order the queue otherwise.
//
// # The leader election
//
//	e := recipe.NewElection(conn, "/app/leader", []byte("svc-a:8080")) // the value: how to reach the leader
//	if err := e.Campaign(ctx); err != nil { ... } // blocks until elected; ctx cancels and deletes the node
//	defer e.Resign()
//	tok := e.Token() // fencing token: the leader's node's czxid, larger for every new leader
//	select {
//	case <-e.Lost(): // the session expired or the node was deleted: stop
//	case <-lead(tok): // pause while !e.IsLeader() (connection down, leadership in doubt)
//	}
//	l, err := recipe.CurrentLeader(ctx, conn, "/app/leader") // Node, Value, Token, Session; ErrNoLeader if none
//	for leader := range e.Observe(ctx) { ... } // the leader now, then each change (the zero Leader: vacant)
//
// An [Election] is a Mutex on the election's directory: the leader is the
// lock's holder, the queue is the line of candidates in the order they
// campaigned, and each candidate watches only its predecessor, so a
// resignation or an expiry wakes exactly one candidate. Campaign is Lock
// (without counting up on a leader: one Resign ends the leadership),
// Resign is Unlock ([ErrLockLost] if the leadership was lost first,
// [ErrNotLocked] if not leading). While the connection is down the
// leadership is in doubt: IsLeader() is false (State() is MutexSuspended)
// and Lost() stays open; a reconnection within the session timeout makes
// it leader again with the same token, an expiry closes Lost() — as
// Curator's LeaderLatch behaves under its default
// StandardConnectionStateErrorPolicy.
//
// [CurrentLeader] syncs, lists and reads the first candidate.
// [Election.Observe] watches only the leader's node while there is one and
// the directory's children while there is none, one watch at a time, and
// syncs before its first read and again in each new session (ZooKeeper
// 3.8's member answers a new session only once it has applied its
// createSession, and so everything the old session saw; with local
// sessions enabled it need not), so its stream never goes back to an older
// leader, which the fuzz harness checks; its goroutine ends with ctx.
//
// Interop goes by node name. The default (__lock__) is kazoo's: a kazoo
// Election (a kazoo Lock) and an Election on one path exclude each other,
// which TestElectionReal checks with Debian's python3-kazoo.
// WithNodeName("latch-") names nodes as Curator's LeaderLatch does
// (_c_<guid>-latch-<seq>, ordered by the text after latch-);
// WithNodeName("lock-") as Curator's LeaderSelector, an
// InterProcessMutex. The scenarios (expiry hands over, a survived
// partition keeps the leader and its token, an expired leader is fenced,
// and more) run on the fake and on the ensemble.
//
// # The read/write lock
//
//	rw := recipe.NewRWMutex(conn, "/locks/catalog") // kazoo's node names; WithRWNodeNames("__READ__", "__WRIT__") for Curator's
//	if err := rw.RLock(ctx); err != nil { ... } // shares with readers; waits for every writer ahead of it
//	defer rw.RUnlock()
//	// elsewhere, on another RWMutex:
//	if err := w.Lock(ctx); err != nil { ... } // alone: waits for every node ahead of it
//	tok := w.WriteLock().Token() // ReadLock() and WriteLock() are the two sides, each a *Mutex
//
// An [RWMutex] is two Mutexes on one directory that differ in their node
// name and in which contenders ahead they wait for: a writer for all of
// them, a reader only for those that are not readers (so any exclusive
// lock on the path — a Mutex, zk.Lock, kazoo's Lock — counts as a
// writer). Readers and writers queue together by sequence number, so a
// reader that comes while a writer waits queues behind it and writers are
// not starved. Each waiter watches only the node it waits for — a reader
// the nearest writer ahead, a writer the node just ahead — so a write
// release wakes exactly the readers between it and the next writer, and a
// read release at most the one writer watching it. Everything else is the
// Mutex's, on either side: protected creates and owner checks, reentrancy,
// cancellation, TryLock, Lost(), State(), pending releases.
//
// A handle holds one side at a time: taking the other side fails at once
// with [ErrOtherSideHeld] rather than deadlocking on its own node (Curator
// allows a write holder to take the read lock, a downgrade, which since
// CURATOR-621 places the read node at the writer's sequence number; the
// RWMutex does not). Tokens are the nodes' czxids: writers' grow, and a
// reader's lies between the writers before it and those after it, so a
// fence that keeps the largest token and the largest writer's token
// refuses a superseded reader or writer.
//
// Interop goes by node name. The defaults are kazoo's (__rlock__,
// __lock__): kazoo's ReadLock and WriteLock and an RWMutex on one path
// exclude each other in queue order, which TestRWMutexReal checks with
// Debian's python3-kazoo. WithRWNodeNames("__READ__", "__WRIT__") names
// nodes as Curator's InterProcessReadWriteLock does
// (_c_<guid>-__READ__<seq>, ordered by the text after the name); that is
// checked with nodes of Curator's form made by hand, not with Curator
// itself. The scenarios (readers share, FIFO without writer starvation,
// wakeups counted per waiter and per release, expiry hands over, an
// expired reader is fenced, and more) run on the fake and on the ensemble.
// Measured on both (2026-12-01), either side uncontended costs what a
// Mutex does (4 requests), and a round from a writer to 100 readers and on
// to the next writer costs 6 requests per acquisition, wakes 100 readers
// per write release and about 0.015 writers per read release (the readers
// release at once; the writer wakes when the reader it watches goes, and
// watches the nearest one left).
//
// # The semaphore
//
//	s := recipe.NewSemaphore(conn, "/app/imports", 3) // at most 3 leases at once, across processes
//	lease, err := s.Acquire(ctx) // waits for a lease; ctx cancels and leaves no node
//	if err != nil { ... } // ErrMaxLeasesMismatch: the path was made with another N
//	defer lease.Release() // ErrLockLost if it was lost first
//	select {
//	case <-lease.Lost(): // node deleted or session expired: stop
//	case <-work(lease.Token()): // the lease node's czxid
//	}
//	l, ok, err := s.TryAcquire(ctx) // a lease only if one is free now; never waits
//
// The layout is kazoo's Semaphore: a lease is an ephemeral node named by a
// GUID directly under the path (every child counts as a lease), and
// acquirers queue on a Mutex at <path>-__lock__. Only that lock's holder
// watches the leases (one watch on the directory), so a release wakes one
// acquirer, and the next in the lock's line wakes when the lock changes
// hands.
//
// The holder creates its lease node first and counts after: at most N
// children, its own included, is a lease; more, and it deletes its node
// and waits for the children to change. Counting first and creating after
// would let a session that expires between the two — losing its hold on
// the lock — create its node on the new session next to a successor's: N+1
// leases (the WaiterExpiresBetweenCreateAndCount scenario checks it).
// Counted after the create, the last of any set of leases held at once saw
// all the others, so the bound holds even when the lock fails.
//
// N is fixed per path: the directory's creator writes its N there in
// decimal, and a contender with another N gets [ErrMaxLeasesMismatch]
// (kazoo raises ValueError), checked on a handle's first acquisition and
// again whenever a listing shows the directory's data changed; data that
// is no number checks nothing, as in kazoo. Curator's
// InterProcessSemaphoreV2 (checked at apache/curator master) leaves N to
// convention and keeps its lock and leases in two children of the path
// (locks, leases), which kazoo would count as leases, so only kazoo shares
// a path with it; and its lock holder keeps its node in place while it
// waits, so that two holders of a lock that failed (N = 1, say) would each
// count the other's node and wait for good.
//
// [Semaphore.TryAcquire] takes no lock: after a sync it returns false,
// touching nothing, if the leases held and the acquirers queued fill N,
// and otherwise creates and counts as Acquire does. A [Lease] is held as a
// Mutex holds its lock, with the same code: protected create found again
// after a lost reply (the same name, answered ErrNodeExists) and adopted
// only if the current session owns it, State() suspended while
// disconnected, and a Release that cannot confirm its Delete left pending
// (MutexReleasing) and finished in the background.
//
// The scenarios (N hold and the next waits, a release admits one and wakes
// only it, TryAcquire full and free, cancellation, expiry of a holder and
// of a waiter between create and count, N mismatch, Lost and Token, bad
// input, and more) run on the fake and on the ensemble, where a kazoo
// Semaphore (Debian's python3-kazoo) and a Semaphore on one path share one
// N, one lock and each other's wakeups. On both, an uncontended Acquire
// and Release costs 8 requests, and a handoff with 10 or 100 waiters 14
// requests per acquisition and one acquirer woken by the leases per
// release (12 and one with a single waiter).
//
// # Options
//
// Each constructor takes options of its own type, named for the recipe
// they configure: NewMutex takes MutexOption, NewElection ElectionOption,
// NewRWMutex RWMutexOption and NewSemaphore SemaphoreOption. An option that
// means the same to every recipe is an Option, which is all four at once,
// so the same value goes to any constructor as it is. The other options
// are typed for the recipes they apply to, and giving one to another
// constructor does not compile:
//
//	                       NewMutex  NewElection  NewRWMutex  NewSemaphore
//	WithACL                   x           x            x            x
//	WithNodeData              x           x            x            x
//	WithRetryTimeout          x           x            x            x
//	WithStatePollInterval     x           x            x            x
//	WithWakeHook              x           x            x            x
//	WithNodeName              x           x                         x
//	WithStateListener         x           x            x
//	WithRWNodeNames                                    x
//
// WithNodeName (a NodeNameOption) does not apply to an RWMutex, whose two
// sides need two names (WithRWNodeNames, an RWMutexOption only), and
// WithStateListener (a StateListenerOption) does not apply to a Semaphore,
// whose leases each have a state of their own. A list of options built
// for one constructor is a slice of its type:
//
//	opts := []recipe.SemaphoreOption{recipe.WithACL(acl), recipe.WithNodeName("lock-")}
//	sem := recipe.NewSemaphore(conn, "/sem", 3, opts...)
package recipe
