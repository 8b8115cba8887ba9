package recipe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// ErrLockLost is returned by Unlock when the hold it would release was lost
// first: the holder's session expired or was closed, or someone deleted the
// holder's node. Another contender may have held the lock in the meantime, so
// the caller's critical section may not have been exclusive to its end.
var ErrLockLost = errors.New("recipe: lock was lost while held")

// ErrNotLocked is returned by Unlock on a Mutex that does not hold the lock.
// It is go-zookeeper's own value, so errors.Is(err, zk.ErrNotLocked) holds.
var ErrNotLocked = zk.ErrNotLocked

// DefaultNodeName is the name a Mutex gives its node after the protected
// prefix: nodes are named "_c_<32 hex GUID>-__lock__<10-digit sequence>".
// kazoo's Lock recognises contenders by "__lock__" before the sequence and
// go-zookeeper's zk.Lock parses the digits after the last "__", so both see
// these nodes as contenders.
const DefaultNodeName = "__lock__"

const (
	defaultRetryTimeout      = 15 * time.Second
	defaultStatePollInterval = 100 * time.Millisecond
)

// Mutex is a distributed lock: the ZooKeeper lock recipe with sequential
// ephemeral nodes under one directory, where each contender waits for the
// node just ahead of it.
//
// # Queue and herd
//
// Contenders are ordered by the sequence suffix ZooKeeper appends to their
// node names, never by the whole name (names begin with a random GUID), nor
// by the order a listing comes in (ZooKeeper lists children in no
// particular order). A waiter watches only its predecessor (a GetW on that
// one node, never a watch on the directory's children), so a release wakes
// exactly one waiter. When the predecessor goes the waiter lists the
// directory again: the predecessor may have been a waiter that crashed, not
// the holder.
//
// # The sequence counter's wrap
//
// ZooKeeper's counter is a signed int32 printed as "%010d": after
// 2147483647 come "-2147483648" and, from "-999999999" on, a sign and nine
// digits ("-000000005"). The Mutex reads the sign and compares sequence
// numbers as serial numbers on the 32-bit counter (RFC 1982): of two
// contenders, the one fewer than 2^31 creates older is ahead, across the
// wrap too. That holds while the oldest contender in the queue is fewer
// than 2^31 creates in the directory older than the newest. The Mutex
// reads the names of its own kind ("_c_<guid>-" + the node name + the
// number) by that prefix, sign and all; in any other name a '-' right
// before ten digits counts as the sign unless it follows a letter or a
// digit ("lock-0000000001" is positive). zk.Lock, kazoo and Curator do not
// read the sign (they compare the text, or the digits after the last dash),
// so past the wrap they order the queue otherwise: do not mix them with a
// Mutex on a directory whose counter has wrapped.
//
// # Other lock implementations on the same path
//
// Every child whose name ends in ten digits is a contender; children without
// such a suffix are ignored. A Mutex therefore excludes go-zookeeper's
// zk.Lock ("lock-<seq>"), kazoo's Lock, WriteLock and ReadLock
// ("<uuid>__lock__<seq>", "<uuid>__rlock__<seq>") and Curator's
// InterProcessMutex ("_c_<uuid>-lock-<seq>") on the same path. Whether they
// exclude a Mutex depends on how they read names, which is what "where their
// naming allows" means:
//   - zk.Lock reads the digits after the last "lock-", or else after the last
//     "__", so it sees nodes of the default name and of WithNodeName("lock-").
//     It fails outright on a child without such digits.
//   - kazoo's Lock only counts children whose name has "__lock__" (or a
//     pattern given in extra_lock_patterns) right before the digits: it sees
//     the default name, not "lock-" nodes unless configured to.
//   - Curator orders by the text after the last "lock-" and falls back to the
//     whole name, so it orders a Mutex correctly only with
//     WithNodeName("lock-"); kazoo then does not see the Mutex.
//
// A foreign child that happens to end in ten digits is taken for a
// contender, so keep the lock's directory for locking.
//
// # Lost replies and expired sessions
//
// The node is created with a GUID in its name. When the create's reply is
// lost the Mutex finds its node by that GUID, and adopts it only if the
// node's ephemeralOwner is the current session (CURATOR-498): a node left by
// an expired session is about to vanish, and taking it as ours would let the
// next waiter hold the lock at the same time (CURATOR-604). Any further node
// with the same GUID (a create that was applied after all) is deleted.
//
// # Holding
//
// While held, the Mutex watches its own node. Lost is closed when the hold is
// lost: the node is deleted by anyone, or the session expires or is closed.
// A dropped connection is not a loss — the session may well survive it — but
// the hold is then Suspended: nobody can tell whether the lock is still held
// until the client reconnects. The Mutex polls the Conn's State and
// SessionID to see this (WithStatePollInterval), since the session's event
// channel belongs to the application.
//
// A holder that must not act without the lock should, as Curator advises,
// stop work when the state leaves MutexHeld (WithStateListener, or State),
// resume only if it returns to MutexHeld, and abandon the work once Lost is
// closed. Writes to other systems should carry Token, the fencing token, so
// the other system can refuse a holder that has been superseded.
//
// # Reentrancy and goroutines
//
// The holder is the *Mutex handle, not a goroutine (Go has no goroutine
// identity): Lock on a handle that holds the lock returns at once and counts
// up, Unlock counts down and deletes the node when the count reaches zero.
// Goroutines sharing one handle therefore share the hold; goroutines that
// must exclude each other need a handle each. A Mutex is safe for concurrent
// use; its Lock, TryLock and Unlock calls run one at a time.
//
// # Cleanup
//
// The Mutex deletes its node on every path that does not end in a hold: ctx
// cancelled or past its deadline while waiting, an error after the create, a
// TryLock that did not get the lock. A create whose reply was lost is
// remembered by its GUID until a listing made after a sync shows its node
// gone: a follower the client reconnects to may show such a node only
// later.
//
// # A failed Unlock
//
// Unlock during a connection loss retries for a bounded time; if that
// fails it never drops the state silently (CURATOR-678), nor does it keep
// the hold. The handle is then MutexReleasing: its critical section is
// over and Token is 0, but its node may still be in the queue and its
// Delete still queued in the client. The release is pending until one of
// these ends it: the next Unlock confirms it (nil, or ErrLockLost if the
// session ended first); the next Lock or TryLock finishes it before
// queueing afresh (it never counts up on a pending release, which may end
// at any moment and let the next waiter in); the background deletion the
// Mutex keeps up, as for its other orphans, removes the node; or the node's
// deletion or the session's end is seen, which closes Lost and makes the
// handle MutexUnlocked. So a caller that ignores Unlock's error neither
// holds a lock it does not have nor keeps other contenders waiting.
//
// # Goroutines and a closed Conn
//
// No goroutine of a Mutex outlives its hold: the one watching the node
// ends with Unlock, with the loss, or with a pending release's end (the one
// exception: a request abandoned to a partition, see Unlock). Once the Conn
// is closed, Lock, TryLock and Unlock fail at once with zk.ErrClosing: the
// Mutex learns of the Close from go-zookeeper's zk.ErrClosing, or from two
// requests in a row failing at once with zk.ErrConnectionClosed while the
// Conn is in StateDisconnected (a Conn that is merely disconnected holds new
// requests and shows StateConnecting), and a hold's goroutine ends when
// its Conn has been in StateDisconnected for the retry timeout.
//
// # Traffic
//
// Uncontended, Lock sends 3 requests (create, GetW on the own node,
// list) and Unlock 1; TryLock sends a sync and a listing first. A waiter
// adds a GetW on its predecessor and one more
// listing per wakeup, however long the queue. A release delivers two watch
// events: one to the next waiter, one to the releaser itself through the
// watch on its own node that Lost relies on.
//
// Compared with the implementations it interoperates with: go-zookeeper's
// zk.Lock leaves its node behind when an error follows the create, cannot be
// cancelled, errors on foreign children and trusts any node with its GUID;
// kazoo's Lock also finds its node by UUID without checking the owner and
// its release reports success for a lock that was lost; Curator's
// InterProcessMutex is where CURATOR-498 (a closing session's node found by
// GUID), CURATOR-604 (two holders after a session change) and CURATOR-678
// (release forgets the hold on connection loss) were reported. The Mutex
// checks the owner, reports ErrLockLost, and, when a release fails, leaves
// a pending release (MutexReleasing) that it keeps finishing in the
// background.
type Mutex struct {
	conn Conn
	dir  string
	cfg  mutexConfig

	// gate serializes Lock, TryLock and Unlock on this handle: an acquisition
	// must finish before a reentrant Lock can count up on it, and a release
	// must finish before a Lock can tell whether the handle still holds.
	gate chan struct{}

	mu      sync.Mutex
	hold    *hold    // nil when the handle holds nothing
	orphans []orphan // own nodes to delete; see orphans.go
	reaping bool     // the background reaper of orphans is running
	// reapEvidence is what the reaper's requests showed of the Conn (see
	// closeEvidence).
	reapEvidence closeEvidence

	// unsaid holds the state changes made under mu that the listener has
	// not heard yet, in the order they were made (see say and tell).
	unsaid []MutexState
	// telling is held by the one goroutine that tells the listener. It is a
	// channel, as gate is, so that a goroutine waiting for it is durably
	// blocked in a synctest bubble, where a listener may well wait on a
	// channel of its own.
	telling chan struct{}

	// closed is set once the Mutex knows its Conn was closed (see
	// closeEvidence): from then on its calls fail at once with errConnClosed.
	closed atomic.Bool

	// poll is the ticker of the watching goroutine (see pollTicker); only
	// that goroutine touches it, and holds are watched one at a time.
	poll *time.Ticker
	// stopWatching tells the watching goroutine of the hold being
	// released to end (see stopWatch). Like poll, it serves all of the
	// handle's holds, one after another: channels of a hold's own were
	// two allocations per hold. Made by watch, for the first hold.
	stopWatching chan struct{}
	// released carries the result of a release's Delete (see
	// deleteBounded), for the call that holds gate.
	released chan error
	// bound is Unlock's context, used by the call that holds gate.
	bound bound
}

// MutexState is where a Mutex's hold stands.
type MutexState int

const (
	// MutexUnlocked: the handle holds nothing.
	MutexUnlocked MutexState = iota
	// MutexHeld: the handle holds the lock and its session is connected.
	MutexHeld
	// MutexSuspended: the handle held the lock when the connection dropped.
	// It may still hold it; that is known only once the client reconnects.
	MutexSuspended
	// MutexLost: the hold was lost. Unlock reports ErrLockLost and resets
	// the handle; the next Lock starts afresh.
	MutexLost
	// MutexReleasing: an Unlock could not confirm that the node was deleted
	// (the connection was lost, or its ctx ended first). The handle holds
	// nothing — its critical section ended when Unlock was called, and
	// Token is 0 — but its node may still be queued, and its Delete may
	// still be queued in the client and apply at any moment. The release is
	// pending until the next Unlock confirms it, the next Lock or TryLock
	// finishes it before queueing afresh, or the node's deletion or the
	// session's end is seen; then Lost closes and the state becomes
	// MutexUnlocked.
	MutexReleasing
)

// String returns the state's name.
func (s MutexState) String() string {
	switch s {
	case MutexUnlocked:
		return "unlocked"
	case MutexHeld:
		return "held"
	case MutexSuspended:
		return "suspended"
	case MutexLost:
		return "lost"
	case MutexReleasing:
		return "releasing"
	}
	return fmt.Sprintf("MutexState(%d)", int(s))
}

// MutexOption configures a Mutex; see NewMutex. Every Option, NodeNameOption
// and StateListenerOption is one.
type MutexOption interface {
	applyMutex(*mutexConfig)
}

// ElectionOption configures an Election; see NewElection. Every Option,
// NodeNameOption and StateListenerOption is one.
type ElectionOption interface {
	applyElection(*mutexConfig)
}

// RWMutexOption configures an RWMutex; see NewRWMutex. Every Option and
// StateListenerOption is one, and so is WithRWNodeNames.
type RWMutexOption interface {
	applyRWMutex(*mutexConfig)
}

// SemaphoreOption configures a Semaphore; see NewSemaphore. Every Option
// and NodeNameOption is one.
type SemaphoreOption interface {
	applySemaphore(*mutexConfig)
}

// Option configures any of the recipes: it is a MutexOption, an
// ElectionOption, an RWMutexOption and a SemaphoreOption, so one value can
// be given to NewMutex, NewElection, NewRWMutex and NewSemaphore alike.
type Option interface {
	MutexOption
	ElectionOption
	RWMutexOption
	SemaphoreOption
}

// NodeNameOption is WithNodeName's option: it configures a Mutex, an
// Election and a Semaphore (whose lock's nodes it names), not an RWMutex.
type NodeNameOption interface {
	MutexOption
	ElectionOption
	SemaphoreOption
}

// StateListenerOption is WithStateListener's option: it configures a
// Mutex, an Election and an RWMutex, whose handles each have one state,
// not a Semaphore.
type StateListenerOption interface {
	MutexOption
	ElectionOption
	RWMutexOption
}

// option is an Option: it applies alike to every recipe's configuration.
type option func(*mutexConfig)

func (o option) applyMutex(c *mutexConfig)     { o(c) }
func (o option) applyElection(c *mutexConfig)  { o(c) }
func (o option) applyRWMutex(c *mutexConfig)   { o(c) }
func (o option) applySemaphore(c *mutexConfig) { o(c) }

// nodeNameOption is a NodeNameOption.
type nodeNameOption func(*mutexConfig)

func (o nodeNameOption) applyMutex(c *mutexConfig)     { o(c) }
func (o nodeNameOption) applyElection(c *mutexConfig)  { o(c) }
func (o nodeNameOption) applySemaphore(c *mutexConfig) { o(c) }

// stateListenerOption is a StateListenerOption.
type stateListenerOption func(*mutexConfig)

func (o stateListenerOption) applyMutex(c *mutexConfig)    { o(c) }
func (o stateListenerOption) applyElection(c *mutexConfig) { o(c) }
func (o stateListenerOption) applyRWMutex(c *mutexConfig)  { o(c) }

// rwMutexOption is an RWMutexOption and nothing else.
type rwMutexOption func(*mutexConfig)

func (o rwMutexOption) applyRWMutex(c *mutexConfig) { o(c) }

// defaultConfig is the configuration before any option.
func defaultConfig() mutexConfig {
	return mutexConfig{
		acl:          zk.WorldACL(zk.PermAll),
		nodeName:     DefaultNodeName,
		retryTimeout: defaultRetryTimeout,
		pollInterval: defaultStatePollInterval,
	}
}

type mutexConfig struct {
	acl          []zk.ACL
	nodeName     string
	data         []byte
	retryTimeout time.Duration
	pollInterval time.Duration
	listener     func(MutexState)
	wakeHook     func(zk.Event)

	// For RWMutex (see rwmutex.go): rwNames is what WithRWNodeNames gave
	// NewRWMutex, the readers' and the writers' node name; NewRWMutex sets
	// blockedBy and admit for its two sides. A Mutex of its own leaves
	// them zero.
	rwNames   *[2]string
	blockedBy func(name string) bool // which contenders ahead make this one wait; nil: every one
	admit     func() error           // asked before Lock or TryLock queues; an error refuses the call
}

// WithACL sets the ACL of the recipe's nodes and of any parents it
// creates. The default is zk.WorldACL(zk.PermAll).
func WithACL(acl []zk.ACL) Option {
	return option(func(c *mutexConfig) { c.acl = acl })
}

// WithNodeName sets the name written between the protected prefix and the
// sequence number; the default is DefaultNodeName. Use "lock-" to be ordered
// correctly by Curator's InterProcessMutex. A name containing '/' makes Lock
// and TryLock fail with zk.ErrInvalidPath.
func WithNodeName(name string) NodeNameOption {
	return nodeNameOption(func(c *mutexConfig) { c.nodeName = name })
}

// WithNodeData sets the data stored in the Mutex's node, for example an
// identifier of the process, which other tools can read to see who holds or
// waits for the lock (kazoo's identifier, zk.Lock's LockWithData).
func WithNodeData(data []byte) Option {
	return option(func(c *mutexConfig) { c.data = data })
}

// WithRetryTimeout bounds how long the Mutex keeps retrying while the
// connection is lost (zk.ErrConnectionClosed, zk.ErrNoServer) before it
// reports the error: during Lock and TryLock (as well as ctx), in Unlock, and
// when deleting its node after a failure. The default is 15s. Values <= 0
// keep the default.
func WithRetryTimeout(d time.Duration) Option {
	return option(func(c *mutexConfig) {
		if d > 0 {
			c.retryTimeout = d
		}
	})
}

// WithStatePollInterval sets how often a hold looks at the Conn's State and
// SessionID to notice a dropped connection (MutexSuspended), a reconnection
// (MutexHeld) or a new session (MutexLost). Node deletion and the expiry of
// the session are noticed at once through the node's watch. The default is
// 100ms. Values <= 0 keep the default.
func WithStatePollInterval(d time.Duration) Option {
	return option(func(c *mutexConfig) {
		if d > 0 {
			c.pollInterval = d
		}
	})
}

// WithStateListener calls fn on every change of the Mutex's state, in the
// order the changes were made and never concurrently: MutexHeld when a hold
// begins or a suspended hold reconnects, MutexSuspended, MutexLost,
// MutexReleasing when an Unlock fails, and MutexUnlocked when a hold or a
// pending release ends. So the last state fn heard is State's, once the
// Mutex is quiet. fn runs on a goroutine that made a change — the caller's
// for Lock and Unlock, the Mutex's own for Suspended, Lost and resumption —
// so it must return promptly and must not call Lock, TryLock or Unlock of
// the same Mutex; hand such work to another goroutine. Lock and Unlock
// return after fn has heard of their own changes.
func WithStateListener(fn func(MutexState)) StateListenerOption {
	return stateListenerOption(func(c *mutexConfig) { c.listener = fn })
}

// WithWakeHook calls fn with every event of a predecessor watch that wakes a
// waiting Lock, before the Lock looks at the queue again. It exists to count
// wakeups: a release must wake exactly one waiter.
func WithWakeHook(fn func(zk.Event)) Option {
	return option(func(c *mutexConfig) { c.wakeHook = fn })
}

// NewMutex returns a Mutex for the lock whose nodes live under the directory
// path. Nothing is sent to ZooKeeper until Lock or TryLock; missing parents
// are created (persistent, with the Mutex's ACL) as needed then. A path that
// ZooKeeper rejects makes Lock fail with the error ZooKeeper gives
// (zk.ErrInvalidPath), never a panic.
func NewMutex(conn Conn, path string, opts ...MutexOption) *Mutex {
	cfg := defaultConfig()
	for _, opt := range opts {
		opt.applyMutex(&cfg)
	}
	return newMutex(conn, path, cfg)
}

// newMutex returns a Mutex of the configuration cfg, which the recipes
// built on Mutex make from their own options.
func newMutex(conn Conn, path string, cfg mutexConfig) *Mutex {
	return &Mutex{conn: conn, dir: path, cfg: cfg, gate: make(chan struct{}, 1), telling: make(chan struct{}, 1)}
}

// Lock blocks until the handle holds the lock, ctx is done, or an error
// occurs that retrying cannot fix. On a handle that already holds the lock it
// counts up and returns nil at once; on one whose release is pending
// (MutexReleasing) it first finishes the release, and then queues afresh
// behind whoever got the lock meanwhile. On any error the handle's node is gone
// (or, if even the deletion failed, will be retried by the next Lock) and
// the error is returned: ctx.Err() if ctx ended the wait, zk.ErrClosing if the
// Conn was closed meanwhile, or the ZooKeeper error. A session that expires
// while Lock waits is not an error: go-zookeeper carries on with a new
// session, and so does Lock, with a new node at the back of the queue.
// Connection loss is retried for the retry timeout (WithRetryTimeout).
//
// While Lock waits for its predecessor, ctx ends the wait at once. A request
// Lock has sent is waited for, though: go-zookeeper holds requests made
// while it is disconnected until it reconnects or, having tried every server,
// fails them with zk.ErrNoServer (about a second on loopback), and Lock must
// know whether its create happened before it can return.
func (m *Mutex) Lock(ctx context.Context) error {
	_, err := m.lock(ctx, true)
	return err
}

// TryLock takes the lock only if it is free now, and never queues: it
// returns false, with its node already deleted, when any contender is ahead.
// It looks at the queue after a sync, so that a lagging follower's stale
// listing cannot make it report a free lock as taken.
// On a handle that already holds the lock it counts up and returns true; on
// one whose release is pending it first finishes the release, as Lock does.
func (m *Mutex) TryLock(ctx context.Context) (bool, error) {
	return m.lock(ctx, false)
}

// Unlock releases one Lock: it counts down a reentrant hold and deletes the
// node when the count reaches zero. It returns ErrNotLocked if the handle
// holds nothing, and ErrLockLost if the hold was lost before the release
// took effect; either way the handle is then unlocked. Unlock returns nil
// only for a node that its own Delete removed (or may have: one whose reply
// was lost): a node someone else deleted is ErrLockLost, even when the
// watch event that tells of it reaches the Mutex only after Unlock began,
// since the deletion may have come long before. While the connection
// is lost Unlock retries for the retry timeout (WithRetryTimeout); if that
// is not enough it returns the error and the release is pending
// (MutexReleasing): the handle no longer holds the lock, but its node may
// still be there, and its Delete may still be queued in the client and go
// through once the connection is back. The Mutex keeps deleting the node
// in the background, as it does its other orphans; call Unlock again to
// finish the release at once. A Lock or TryLock on the handle finishes it
// first, before it queues afresh. A pending release also ends by itself when the node's
// deletion or the session's end is seen: the handle is then unlocked, Lost
// is closed, and the next Unlock returns nil (ErrLockLost if the session
// ended first). The queued request keeps a goroutine until the client
// answers or fails it.
func (m *Mutex) Unlock() error {
	m.mu.Lock()
	held := m.hold != nil
	m.mu.Unlock()
	if !held {
		return ErrNotLocked
	}
	select {
	case m.gate <- struct{}{}:
	default:
		// Another call holds the gate: wait for it within the retry
		// timeout too.
		ctx, cancel := context.WithTimeout(context.Background(), m.cfg.retryTimeout)
		defer cancel()
		return m.UnlockContext(ctx)
	}
	defer m.leave()
	// Holding the gate, this call has the handle's bound to itself.
	ctx := m.bound.arm(m.cfg.retryTimeout)
	defer m.bound.disarm()
	return m.unlock(ctx)
}

// UnlockContext is Unlock bounded by ctx instead of the retry timeout. If ctx
// ends before the deletion is known to have happened, the release is pending
// (MutexReleasing) and the error says why — unless the hold was lost
// meanwhile: then nothing is left to release, and it returns ErrLockLost.
func (m *Mutex) UnlockContext(ctx context.Context) error {
	m.mu.Lock()
	held := m.hold != nil
	m.mu.Unlock()
	if !held {
		return ErrNotLocked
	}
	if err := m.enter(ctx); err != nil {
		return err
	}
	defer m.leave()
	return m.unlock(ctx)
}

// unlock is UnlockContext once the gate is taken.
func (m *Mutex) unlock(ctx context.Context) error {
	m.mu.Lock()
	h := m.hold
	switch {
	case h == nil:
		m.mu.Unlock()
		return ErrNotLocked
	case h.settled:
		// A pending release that ended by itself; the listener was told.
		m.hold = nil
		m.mu.Unlock()
		h.watching.Wait()
		return h.settledErr
	case h.state == MutexLost:
		m.hold = nil
		m.say(MutexUnlocked)
		m.mu.Unlock()
		h.watching.Wait()
		m.tell()
		return ErrLockLost
	case h.count > 1:
		h.count--
		m.mu.Unlock()
		return nil
	}
	h.releasing = true
	m.mu.Unlock()
	_, err := m.finishRelease(ctx, h)
	return err
}

// finishRelease deletes the hold's node for Unlock, or for a Lock that
// finds a pending release; h.releasing is set. settled reports that the
// hold is over (err is then nil or ErrLockLost); otherwise the release is
// pending and err says why.
func (m *Mutex) finishRelease(ctx context.Context, h *hold) (settled bool, err error) {
	lost, err := m.release(ctx, h)
	if err != nil {
		m.mu.Lock()
		gone := h.state == MutexLost || h.ended
		m.mu.Unlock()
		if gone {
			// The hold was lost while the release ran (its session
			// ended, or its node was deleted), and then ctx ended:
			// nothing is left to release. Whatever lost it, the node is
			// deleted in the background should it still be there.
			m.adopt(orphan{node: h.node})
			lost, err = true, nil
		}
	}
	if err != nil {
		m.mu.Lock()
		h.releasing = false
		h.pending = true
		if h.state != MutexLost && h.state != MutexReleasing {
			// A hold lost since the check above stays lost: the next
			// Unlock reports it.
			h.state = MutexReleasing
			m.sayOf(h, MutexReleasing)
		}
		m.mu.Unlock()
		// A caller may well ignore the error (defer m.Unlock()), and then
		// the node would stay in the queue, and every contender behind it
		// wait, for as long as the session lives: as Curator does with a
		// failed delete, keep deleting it in the background. Its deletion
		// ends the pending release (see nodeGone).
		m.adopt(orphan{node: h.node})
		m.tell()
		return false, fmt.Errorf("recipe: unlock %s: release not confirmed, call Unlock again: %w", h.node, err)
	}
	m.stopWatch(h)
	m.mu.Lock()
	// A pending release is no hold: that its node went first is no news
	// to anyone listening for MutexLost.
	newlyLost := lost && h.state != MutexLost && !h.pending
	if lost {
		h.markLost()
	}
	if newlyLost {
		m.sayOf(h, MutexLost)
	}
	m.sayOf(h, MutexUnlocked)
	m.hold = nil
	m.mu.Unlock()
	m.tell()
	if lost {
		return true, ErrLockLost
	}
	return true, nil
}

// Token returns the fencing token of the current hold: the czxid of the
// handle's node. Tokens of later holds of the same lock are larger, so a
// system that remembers the largest token it has seen can refuse a holder
// that has been superseded. Token returns 0 when the handle does not hold
// the lock (unlocked, releasing, or the hold was lost).
func (m *Mutex) Token() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hold == nil || (m.hold.state != MutexHeld && m.hold.state != MutexSuspended) {
		return 0
	}
	return m.hold.token
}

// Lost returns a channel that is closed when the current hold is lost: its
// node was deleted by anyone, or its session expired or was closed. A hold
// that ends by Unlock leaves its channel open; a pending release
// (MutexReleasing) closes it when it ends by itself. Without a hold, Lost
// returns a closed channel: the caller does not hold the lock.
func (m *Mutex) Lost() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hold == nil {
		return closedChan
	}
	return m.hold.lostChan()
}

// State returns where the handle's hold stands.
func (m *Mutex) State() MutexState {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hold == nil {
		return MutexUnlocked
	}
	return m.hold.state
}

// Path returns the lock's directory, as given to NewMutex.
func (m *Mutex) Path() string { return m.dir }

var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// hold is one continuous holding of the lock by a handle, from the moment
// its node came first to the Unlock that deletes it or the loss.
type hold struct {
	node    string // full path of the handle's node
	guid    string // the GUID in the node's name
	sweep   bool   // a create's reply was lost: look for strays on release
	token   int64  // the node's czxid
	session int64  // the session that owns the node
	self    <-chan zk.Event

	// Guarded by Mutex.mu.
	count     int
	state     MutexState
	releasing bool // Unlock is deleting the node: its NodeDeleted is expected
	goneEarly bool // the node's deletion was seen while releasing
	// The handle's own Deletes of the node, as far as their answers go
	// (see ownDeletion): one deleted it (deleted), one may have (unsure:
	// its reply was lost), and those whose answers have not been read
	// (open: abandoned when their Unlock's ctx ended).
	deleted    bool
	unsure     bool
	open       []<-chan error
	seenGone   bool  // a pending release's node was seen deleted while a Delete of its was open
	pending    bool  // an Unlock failed: the release is pending (MutexReleasing)
	ended      bool  // the session ended while a pending release was being finished
	settled    bool  // the pending release ended without Unlock (see settleLocked)
	settledErr error // what the next Unlock returns for a settled release
	lostOnce   sync.Once

	// lost is closed when the hold is lost. A Mutex makes it only when
	// Lost asks for it, or, closed, when the hold is lost: most holds end
	// by Unlock, which leaves it open, and nobody ever looks at it.
	lost chan struct{}
	// stopped is set by Unlock once it is done with the hold, before it
	// tells the watching goroutine to end (Mutex.stopWatching).
	stopped atomic.Bool
	// watching counts the hold's watching goroutine until it has ended.
	watching sync.WaitGroup
}

// markLost records the loss; m.mu must be held.
func (h *hold) markLost() {
	h.state = MutexLost
	h.closeLost()
}

// closeLost closes the hold's lost channel, or, if nobody has asked for
// it yet, makes it a closed one; m.mu must be held.
func (h *hold) closeLost() {
	h.lostOnce.Do(func() {
		if h.lost == nil {
			h.lost = closedChan
			return
		}
		close(h.lost)
	})
}

// lostChan returns the hold's lost channel, making it if need be; m.mu
// must be held.
func (h *hold) lostChan() chan struct{} {
	if h.lost == nil {
		h.lost = make(chan struct{})
	}
	return h.lost
}

// enter takes the handle's gate, or gives up when ctx is done. A free gate
// is taken even with ctx done, so the outcome does not depend on which of
// two ready cases select picks.
func (m *Mutex) enter(ctx context.Context) error {
	select {
	case m.gate <- struct{}{}:
		return nil
	default:
	}
	select {
	case m.gate <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *Mutex) leave() { <-m.gate }

// sayOf queues a change of h's state for the listener, if h is the
// handle's current hold: a hold that Unlock or Lock has let go of is no
// news. m.mu must be held, so that the listener hears of the changes in the
// order they were made, whichever goroutines made them; tell tells it.
func (m *Mutex) sayOf(h *hold, s MutexState) {
	if m.hold == h {
		m.say(s)
	}
}

// say queues a change of the handle's state for the listener; m.mu must be
// held.
func (m *Mutex) say(s MutexState) {
	if m.cfg.listener != nil {
		m.unsaid = append(m.unsaid, s)
	}
}

// tell tells the listener of the changes said so far; m.mu must not be
// held. One goroutine tells at a time, and whichever tells hears what the
// others said too, so the listener is never called concurrently and hears
// every change in order; when tell returns, the caller's own changes have
// been told.
func (m *Mutex) tell() {
	if m.cfg.listener == nil {
		return
	}
	m.telling <- struct{}{}
	defer func() { <-m.telling }()
	for {
		m.mu.Lock()
		unsaid := m.unsaid
		m.unsaid = nil
		m.mu.Unlock()
		if len(unsaid) == 0 {
			return
		}
		for _, s := range unsaid {
			m.cfg.listener(s)
		}
	}
}

func (m *Mutex) lock(ctx context.Context, wait bool) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := m.enter(ctx); err != nil {
		return false, err
	}
	defer m.leave()
	if m.closed.Load() {
		return false, errConnClosed
	}
	if m.cfg.admit != nil {
		if err := m.cfg.admit(); err != nil {
			return false, err
		}
	}
	if reentered, err := m.reenter(ctx); err != nil || reentered {
		return reentered, err
	}
	if strings.Contains(m.cfg.nodeName, "/") {
		return false, zk.ErrInvalidPath
	}
	m.retryOrphans()
	if !wait {
		busy, err := m.busy(ctx)
		if err != nil || busy {
			return false, err
		}
	}
	h, err := m.acquire(ctx, wait)
	if err != nil || h == nil {
		return false, err
	}
	m.mu.Lock()
	m.hold = h
	m.say(MutexHeld)
	m.mu.Unlock()
	m.tell()
	m.watch(h)
	return true, nil
}

// reenter counts up a live hold. A lost or settled hold is discarded, and a
// pending release finished, so the caller starts afresh; err means the
// pending release could not be finished, and the handle stays
// MutexReleasing. A pending release is never counted up: its Delete may
// apply at any moment, and a Lock that returned on it would hold nothing
// (another contender may already hold the lock).
func (m *Mutex) reenter(ctx context.Context) (bool, error) {
	m.mu.Lock()
	h := m.hold
	switch {
	case h == nil:
		m.mu.Unlock()
		return false, nil
	case h.settled:
		m.hold = nil
		m.mu.Unlock()
		h.watching.Wait()
		return false, nil
	case h.pending:
		h.releasing = true
		m.mu.Unlock()
		// Through connection loss for the retry timeout at most, as every
		// other step of Lock and TryLock.
		rctx, cancel := context.WithTimeout(ctx, m.cfg.retryTimeout)
		defer cancel()
		if settled, err := m.finishRelease(rctx, h); !settled {
			return false, err
		}
		return false, nil
	case h.state != MutexLost:
		h.count++
		m.mu.Unlock()
		return true, nil
	}
	m.hold = nil
	m.say(MutexUnlocked)
	m.mu.Unlock()
	h.watching.Wait()
	m.tell()
	return false, nil
}

// busy reports whether the lock has any contender now that would make the
// handle wait (any at all, unless blockedBy says otherwise), so TryLock can
// give up without putting a node in the queue (which would wake whoever is
// queued behind it when it is deleted again).
//
// The listing follows a sync: a follower that lags may still list nodes
// that are gone, and an answer read there would say the lock is taken when
// it was free for the whole call.
func (m *Mutex) busy(ctx context.Context) (bool, error) {
	children, err := m.syncedChildren(ctx)
	if errors.Is(err, zk.ErrNoNode) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(children, func(name string) bool {
		_, ok := sequenceIn(name, m.cfg.nodeName)
		return ok && (m.cfg.blockedBy == nil || m.cfg.blockedBy(name))
	}), nil
}
