package recipe

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// ErrMaxLeasesMismatch is returned by Acquire and TryAcquire when the
// semaphore's directory records a number of leases other than the
// Semaphore's own: two contenders that disagree on N could together hold
// more leases than either allows. kazoo's Semaphore raises ValueError for
// the same disagreement.
var ErrMaxLeasesMismatch = errors.New("recipe: the semaphore's directory records other max leases")

// ErrInvalidMaxLeases is returned by Acquire and TryAcquire of a Semaphore
// made with fewer than one lease.
var ErrInvalidMaxLeases = errors.New("recipe: a semaphore needs at least one lease")

// semaphoreLockSuffix names the directory of a semaphore's acquirers' lock:
// the semaphore's path with this suffix, a sibling of the semaphore's
// directory, as kazoo's Semaphore names it ("<path>-__lock__").
const semaphoreLockSuffix = "-__lock__"

// Semaphore is a counting semaphore: at most N leases are held at once, by
// whichever sessions hold them. It follows kazoo's Semaphore, whose layout
// it shares, and Curator's InterProcessSemaphoreV2, whose order of create
// and count it keeps.
//
// # Layout
//
// A lease is an ephemeral node directly under the semaphore's directory,
// named by 32 random hex digits (a GUID, as kazoo names its leases with a
// UUID's hex) and carrying the data given with WithNodeData (kazoo's
// identifier). Every child of the directory counts as a held lease, whoever
// made it: kazoo counts them so, and counting a stranger errs on the safe
// side. Keep the directory for leases. The directory's own data is N in
// decimal, written by whoever creates the directory (see Max leases).
//
// Acquirers queue on a Mutex, the acquirers' lock, whose directory is the
// semaphore's path with "-__lock__" appended ("/app/sem" has its lock at
// "/app/sem-__lock__"): kazoo's Semaphore takes a kazoo Lock there, and the
// Mutex's default node name is one kazoo's Lock counts, so a kazoo
// Semaphore and a Semaphore on one path queue in one line and respect one
// N together. Curator's InterProcessSemaphoreV2 keeps its lock and its
// leases in two children of the path ("locks", "leases"), which kazoo would
// count as two leases; it cannot share a path with either.
//
// # Acquiring
//
// Acquire takes the acquirers' lock, waiting its turn (each waiter watches
// only its predecessor there), and then, holding it:
//
//  1. creates its lease node;
//  2. lists the directory: if the leases, its own included, are at most N,
//     it reads its node's stat (a GetW, which proves the current session
//     owns the node, gives the fencing token and arms the watch behind
//     Lost) and holds the lease;
//  3. otherwise deletes its node, watches the directory's children, and
//     waits for a change (a released or expired lease) before going back
//     to 1. The listing that arms the watch counts too: a lease released in
//     between sends it back to 1 at once.
//
// It lets go of the lock once it holds a lease (or gives up). Only the
// lock's holder watches the leases — one watch on the directory — so a
// released lease wakes exactly one acquirer, and the one behind it in the
// lock's line is woken in turn when the lock changes hands.
//
// Only the lock's holder, in the session that holds it, runs steps 1 to 3.
// Before each create, before each count and before it waits, it makes
// sure that it still holds the lock in the Conn's current session. A hold
// that is gone — the session expired (go-zookeeper carries on with a new
// one, and would send the next create there) or someone deleted the
// lock's node — sends it back to the lock's line, after it deletes any
// node it has not counted, so a lease it takes is of the lock's session.
// Two acquirers running the loop at once (one that lost the lock without
// noticing, and the lock's next holder) could each count the other's
// node, find more than N, step back together, see at once the room the
// other's deletion made, and start again, in lockstep, for ever. A lease
// that goes while Acquire lets go of the lock (its session expired
// meanwhile) is not returned either: Acquire queues again.
//
// The lease node is created before the count, never after: a count made
// first could be followed by an expiry of the session that made it (and
// with it of its hold on the lock), a successor's lease, and the create
// sent on the new session, and N+1 leases would be held. Made the other
// way round the count is a proof: of any set of leases held at once, the
// last created was counted after all the others existed, so had there been
// more than N it would have seen them and stepped back. That holds even
// when the acquirers' lock fails (an expiry, someone deleting its node);
// the lock is there so that acquirers wait one at a time, for progress,
// not for safety.
// A lease node left by an expired session vanishes with it; one that
// carries our GUID but belongs to another session (a create whose reply
// was lost, made just before the session expired) is deleted and never
// taken for a lease (CURATOR-498, -604).
//
// # Max leases
//
// N is fixed per path. As kazoo does, the first contender to create the
// directory writes its N there (created with the data, in one request), and
// a contender whose N differs is refused: Acquire and TryAcquire return
// ErrMaxLeasesMismatch and leave no node behind. A Semaphore reads the
// directory's data on its first acquisition, and again whenever a listing
// of the directory shows its data changed or the directory made anew. Data
// that is no decimal number (a directory made by hand, or by kazoo in the
// moment between its create and its set) records nothing and is not
// checked, as in kazoo; the Semaphore does not write to a directory it did
// not create. To change N, delete the directory (with no leases held).
// Curator instead leaves N to convention (or to a SharedCount it reads),
// and does nothing when two contenders disagree: the check costs one read
// per handle, and catches a misconfiguration that would otherwise hand out
// more leases than either side allows.
//
// # TryAcquire
//
// TryAcquire takes no lock and never waits. After a sync it counts the
// leases held and the acquirers queued on the lock: if these fill N, it
// returns false without touching anything, so a lease that frees up goes to
// an acquirer that was waiting first (as golang.org/x/sync/semaphore's
// TryAcquire fails while there are waiters). Otherwise it creates its node
// and counts as Acquire does; should it find more than N (another acquirer
// won the race), it deletes its node and returns false.
//
// # A lease
//
// A Lease is held as a Mutex holds its lock, with the same machinery: a
// goroutine watches the node, Lost closes when the node is deleted or the
// session ends, State is MutexSuspended while the connection is down, and
// Token is the node's czxid. Release deletes the node; when it cannot
// confirm the deletion (the connection stays lost) the lease is
// MutexReleasing — no longer held, Token 0 — and its node is deleted in
// the background, as a Mutex's failed Unlock is: it neither silently drops
// the lease, leaving its node to occupy one of the N for as long as the
// session lives (CURATOR-678), nor keeps it. Call Release again to confirm.
//
// # Cleanup
//
// On every path that does not end in a lease the Semaphore deletes its
// node: over N, ctx cancelled, an error after the create, the directory's
// N refused. A node it cannot delete is deleted in the background until
// the server answers, however long it stays out of reach (a session
// outlives an ensemble without quorum), or the Conn is closed. A create whose reply was lost
// is repeated under the same name: ZooKeeper answers ErrNodeExists if the
// first was applied, so the node is found again without a listing and
// without twins (and a create held up on the member the client left
// cannot apply later: ZooKeeper refuses a moved session's requests from
// the old member). An Acquire cancelled while it waits for a lease leaves
// its watch on the directory until the leases next change (go-zookeeper
// cannot remove a watch); that event reaches nobody.
//
// # Options
//
// NewSemaphore takes the Mutex's options but WithStateListener (see
// SemaphoreOption): WithACL (lease nodes, the lock's nodes and
// any directory created), WithNodeData (lease nodes and, as kazoo does with
// its identifier, the lock's nodes), WithNodeName (the lock's nodes;
// leave it at DefaultNodeName to queue with kazoo), WithRetryTimeout,
// WithStatePollInterval (the leases' and the lock's) and WithWakeHook,
// which hears every event that wakes a waiting Acquire: a change of the
// directory's children (EventNodeChildrenChanged on the directory) for the
// lock's holder, the deletion of its predecessor for a waiter on the lock.
// WithStateListener is no SemaphoreOption: a Semaphore has many leases,
// each with its own State.
//
// # Traffic
//
// Uncontended, Acquire sends 7 requests — the lock's 3, a create, a listing
// and a GetW for the lease, and the lock's Delete — plus one read of the
// directory on the handle's first acquisition, and Release 1. TryAcquire
// sends a sync and two listings to look, and the lease's 3 to take one.
// An acquirer that finds the leases full sends the Delete of its node and
// the watched listing, and, once woken, the create and the listing again.
// A release delivers one watch event to the releaser (its own node's
// watch, behind Lost) and one to the lock's holder; that one's release of
// the lock delivers one to itself and one to the next in the lock's line.
//
// # Goroutines
//
// A Semaphore is safe for concurrent use. Acquire calls on one handle run
// one at a time, each waiting for the one before to get its lease or give
// up (the lock is reentrant per handle, and two holders of it would both
// watch the leases); TryAcquire does not wait for them. Acquirers that
// must not queue behind each other need a handle each. No goroutine of a Lease outlives it: the one
// watching its node ends with Release, with the loss, or once the Conn is
// closed.
type Semaphore struct {
	conn Conn
	dir  string
	max  int

	// nodes never locks. It lends the lease nodes the Mutex's helpers:
	// cleanup with background deletion of what could not be deleted,
	// retries through connection loss, and the closed-Conn detection.
	nodes *Mutex
	// lock is the acquirers' lock, on dir + semaphoreLockSuffix.
	lock *Mutex
	// leaseCfg configures each Lease's Mutex, the keeper of its hold.
	leaseCfg mutexConfig
	wakeHook func(zk.Event)

	// gate serializes Acquire on this handle: the lock is reentrant per
	// handle, and two Acquires holding it at once would both watch the
	// leases.
	gate chan struct{}

	mu sync.Mutex
	// The directory's stat when its data was last checked: a listing
	// whose stat differs (data set, or the directory made anew) makes the
	// next attempt check again.
	checked    bool
	dirCzxid   int64
	dirVersion int32
}

// Lease is one lease of a Semaphore, held from Acquire or TryAcquire to
// Release or its loss. Its methods are safe for concurrent use.
type Lease struct {
	m    *Mutex // holds the lease's node as a Mutex holds its lock
	node string
	lost <-chan struct{}
}

// NewSemaphore returns a Semaphore of maxLeases leases on the directory
// path. Nothing is sent to ZooKeeper until Acquire or TryAcquire; the
// directory and its parents are created (persistent, with the options'
// ACL) as needed then, the directory with maxLeases as its data. A
// maxLeases below 1, or a path ZooKeeper rejects (and "/", whose child
// /zookeeper would count as a lease), make Acquire and TryAcquire fail with
// ErrInvalidMaxLeases or zk.ErrInvalidPath, never a panic. See Semaphore
// for the options.
func NewSemaphore(conn Conn, path string, maxLeases int, opts ...SemaphoreOption) *Semaphore {
	given := defaultConfig()
	for _, opt := range opts {
		opt.applySemaphore(&given)
	}
	// The Semaphore calls the wake hook itself (see awaitRoom); the leases and
	// the helper that keeps the nodes call none.
	noHooks := given
	noHooks.wakeHook = nil
	return &Semaphore{
		conn:     conn,
		dir:      path,
		max:      maxLeases,
		nodes:    newMutex(conn, path, noHooks),
		lock:     newMutex(conn, path+semaphoreLockSuffix, given),
		leaseCfg: noHooks,
		wakeHook: given.wakeHook,
		gate:     make(chan struct{}, 1),
	}
}

// Path returns the semaphore's directory, as given to NewSemaphore.
func (s *Semaphore) Path() string { return s.dir }

// MaxLeases returns N, the number of leases the Semaphore allows, as given
// to NewSemaphore.
func (s *Semaphore) MaxLeases() int { return s.max }

// Acquire blocks until it holds a lease, ctx is done, or an error occurs
// that retrying cannot fix. On any error no node of this call is left (or,
// if even its deletion failed, it is deleted in the background) and the
// error is returned: ctx.Err() if ctx ended the wait, ErrMaxLeasesMismatch
// if the directory records another N, zk.ErrClosing if the Conn was
// closed, or the ZooKeeper error. A session that expires while Acquire
// waits is not an error: go-zookeeper carries on with a new session, and
// so does Acquire, at the back of the acquirers' line. So does an Acquire
// that finds its hold on the acquirers' lock gone (the session expired or
// changed, or someone deleted its node): whatever lease node it has not
// counted yet it deletes, and it queues for the lock again. Connection
// loss is retried for the retry timeout (WithRetryTimeout).
//
// The lease does not depend on the acquirers' lock, which Acquire lets go
// of before it returns: should that Unlock fail (the connection lost), the
// lock's node is deleted in the background, and the lease is returned all
// the same. A lease lost while Acquire lets go of the lock (its session
// expired meanwhile, or its node was deleted) is not returned: Acquire
// queues again, as for an expiry while it waits.
func (s *Semaphore) Acquire(ctx context.Context) (*Lease, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	defer s.leave()
	if err := s.prepare(ctx); err != nil {
		return nil, err
	}
	for {
		if err := s.lock.Lock(ctx); err != nil {
			return nil, err
		}
		l, relock, err := s.acquireLocked(ctx)
		// Whatever this Unlock reports — the lock lost meanwhile, or its
		// release left pending and finished in the background — a lease
		// counted under it stands on its own.
		_ = s.lock.Unlock()
		if l != nil && l.m.heldSession() == 0 {
			// The lease went while the Unlock ran: returned, it would be
			// held by a session that has ended, or by nobody. Its node
			// is gone; Release only settles the handle.
			_ = l.Release()
			l, relock = nil, true
		}
		if !relock {
			return l, err
		}
		// The lock went (the session expired, or its node was deleted),
		// or the lease did: queue for the lock again.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// TryAcquire takes a lease only if one is free for it now, and never
// waits: it returns false, leaving no node, when the leases held and the
// acquirers queued for the lock fill N, or when another acquirer took the
// last lease first (see Semaphore). Its errors are Acquire's.
func (s *Semaphore) TryAcquire(ctx context.Context) (*Lease, bool, error) {
	if err := s.usable(ctx); err != nil {
		return nil, false, err
	}
	if err := s.prepare(ctx); err != nil {
		return nil, false, err
	}
	for {
		free, err := s.room(ctx)
		if err != nil || !free {
			return nil, false, err
		}
		l, again, err := s.attempt(ctx, 0)
		switch {
		case err != nil:
			return nil, false, err
		case l != nil:
			return l, true, nil
		case !again:
			return nil, false, nil
		}
		// The node went before it was counted (the session expired, or
		// someone deleted it): look again.
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
	}
}

// Release gives the lease back: it deletes the lease's node, and the next
// acquirer may take it. It returns ErrLockLost if the lease was lost
// first (its node deleted, or its session ended: another contender may
// have held it meanwhile), ErrNotLocked if it was released already. While
// the connection is lost Release retries for the retry timeout; if that is
// not enough it returns the error and the release is pending (State
// MutexReleasing, see Mutex.Unlock): the lease is no longer held, and its
// node is deleted in the background; call Release again to confirm.
func (l *Lease) Release() error { return l.m.Unlock() }

// ReleaseContext is Release bounded by ctx instead of the retry timeout
// (see Mutex.UnlockContext).
func (l *Lease) ReleaseContext(ctx context.Context) error { return l.m.UnlockContext(ctx) }

// Lost returns a channel that is closed when the lease is lost: its node
// was deleted by anyone, or its session expired or was closed. A lease
// ended by Release leaves it open, unless the release was pending and
// ended by itself (see Mutex.Lost).
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Token returns the lease's fencing token, the czxid of its node, while the
// lease is held (State MutexHeld or MutexSuspended), and 0 once it is
// released or lost. A later lease of the same semaphore has a larger
// token; with N > 1 holders at once, a token orders leases but does not
// single out one holder.
func (l *Lease) Token() int64 { return l.m.Token() }

// Node returns the full path of the lease's node.
func (l *Lease) Node() string { return l.node }

// State returns where the lease stands: MutexHeld, MutexSuspended while the
// connection is down, MutexLost, MutexReleasing while a failed Release is
// pending, MutexUnlocked once released.
func (l *Lease) State() MutexState { return l.m.State() }

// usable reports what makes an acquisition fail before it sends anything.
func (s *Semaphore) usable(ctx context.Context) error {
	if s.max < 1 {
		return fmt.Errorf("%w (NewSemaphore got %d)", ErrInvalidMaxLeases, s.max)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.dir == "/" || strings.Contains(s.lock.cfg.nodeName, "/") {
		return zk.ErrInvalidPath
	}
	if s.nodes.closed.Load() || s.lock.closed.Load() {
		return errConnClosed
	}
	return nil
}

// enter takes the handle's gate for an Acquire, or gives up when ctx is
// done (see Mutex.enter).
func (s *Semaphore) enter(ctx context.Context) error {
	select {
	case s.gate <- struct{}{}:
		return nil
	default:
	}
	select {
	case s.gate <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Semaphore) leave() { <-s.gate }

// prepare retries the lease nodes left to delete, and checks the
// directory's N (making the directory) on the handle's first acquisition.
func (s *Semaphore) prepare(ctx context.Context) error {
	s.nodes.retryOrphans()
	s.mu.Lock()
	checked := s.checked
	s.mu.Unlock()
	if checked {
		return nil
	}
	return s.checkDir(ctx)
}

// recordedMaxLeases reads N from a semaphore directory's data: a decimal
// number, as kazoo writes it (surrounding space allowed, as Python's int
// allows it). ok is false for any other data, which records nothing.
func recordedMaxLeases(data []byte) (n int64, ok bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	return n, err == nil
}
