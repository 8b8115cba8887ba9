package recipe

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// DefaultReadNodeName is the name an RWMutex's readers give their nodes
// after the protected prefix: "_c_<32 hex GUID>-__rlock__<sequence>".
// It is the name kazoo's ReadLock writes after its UUID, and its writers'
// name is DefaultNodeName ("__lock__"), kazoo's WriteLock's, so kazoo's
// ReadLock and WriteLock on the same path take part in the same queue.
const DefaultReadNodeName = "__rlock__"

// ErrOtherSideHeld is returned by Lock and TryLock of one side of an
// RWMutex while the other side of the same RWMutex holds (or is suspended
// holding): a handle reads or writes, never both. Its node would queue
// behind the handle's own, which does not go while the caller waits.
var ErrOtherSideHeld = errors.New("recipe: this RWMutex holds the other side of the lock")

// RWMutex is a distributed read/write lock: readers share it, a writer
// holds it alone. It is two Mutexes on one directory, which differ in the
// name of their nodes and in which contenders ahead they wait for: the
// write side (WriteLock) waits for every contender ahead of it, as any
// Mutex does, and the read side (ReadLock) only for those that are not
// readers. Everything else is the Mutex's, on either side: protected
// creates found again by GUID and adopted only if the current session owns
// them, reentrancy per handle, cancellation that deletes the node,
// TryLock, Lost, State (MutexSuspended while the connection is down), the
// pending release of a failed Unlock, and the background deletion of nodes
// it could not delete.
//
// # Queue and herd
//
// Readers and writers queue together, in the order of the sequence
// numbers ZooKeeper gives their nodes (read as the Mutex reads them). A
// reader holds once no writer is ahead of it, a writer once nothing is.
// So the lock is fair and writers are not starved: a reader that comes
// while a writer waits queues behind that writer, even while other readers
// hold. Each waiter watches only the node it waits for: a reader the
// nearest writer ahead of it, a writer the node just ahead of it, of
// either kind. A writer's release therefore wakes the readers queued
// between it and the next writer (all of whom may hold now) and, if the
// node right behind it is a writer, that writer; a reader's release wakes
// at most the writer right behind it. A waiter that wakes lists the
// directory again: the node it watched may have been a waiter that gave
// up.
//
// # Who is a reader
//
// A reader is any child whose name ends in the readers' node name followed
// by a sequence number; every other contender (a child ending in a
// sequence number) is a writer. So readers wait for the nodes of any
// exclusive lock on the same path — a Mutex, go-zookeeper's zk.Lock,
// kazoo's Lock, Curator's InterProcessMutex. Whether such a lock waits for
// the readers depends on how it reads names: a Mutex does (every child
// ending in a sequence number is a contender), and so does zk.Lock (it
// reads the digits after the last "__"); kazoo's Lock does not (it counts
// only "__lock__" nodes, and so ignores kazoo's own ReadLock too; its
// WriteLock counts both kinds); Curator's InterProcessMutex counts them
// but orders them by whole name (see Mutex).
//
// # Other implementations on the same path
//
// The default names are kazoo's (DefaultReadNodeName, DefaultNodeName).
// kazoo's ReadLock names its nodes "<uuid4 hex>__rlock__<seq>" and waits
// for the contenders ahead of it whose names end in "__lock__" and ten
// digits (with an optional sign); its WriteLock names them
// "<uuid4 hex>__lock__<seq>" and waits for those ending in "__lock__" or
// "__rlock__". Each watches the nearest such contender below it, compared
// by the text of the sequence number. With the default names both sides of
// an RWMutex and kazoo's ReadLock and WriteLock therefore decide alike,
// and exclude each other on one path.
//
// Curator's InterProcessReadWriteLock makes protected nodes named
// "_c_<UUID>-__READ__<seq>" and "_c_<UUID>-__WRIT__<seq>" and sorts all
// children by the text after "__READ__" or "__WRIT__" (after the whole
// name for a child with neither). Its writer holds when it is first and
// watches the node just ahead; its reader holds when no child containing
// "__WRIT__" is ahead, and watches the first such child. With
// WithRWNodeNames("__READ__", "__WRIT__") the RWMutex's names have
// Curator's form (its GUID is 32 hex digits, Curator's UUID 36 characters;
// neither reads the other's), so the two order and decide alike. Curator's
// readers do not take kazoo's or the default names for writers: on a path
// shared with Curator, name every side as Curator does (a Mutex with
// WithNodeName("__WRIT__")).
//
// As for the Mutex, these implementations compare the text of sequence
// numbers, so past the counter's wrap they order the queue otherwise (see
// Mutex). The RWMutex reads its own side's names by their prefix, sign and
// all, and the other side's as it reads any name: for a node name that
// ends in a letter or a digit, the other side's nodes are read right only
// below the wrap. Both default names and Curator's end in '_'.
//
// # One handle, one side
//
// Each side is reentrant as a Mutex is: RLock on a handle that reads
// counts up, on the one node. But a handle holds one side at a time: Lock
// or TryLock of one side while the other side of the same RWMutex holds
// (MutexHeld or MutexSuspended) fails at once with ErrOtherSideHeld. Its
// node would queue behind the handle's own, which would stay while the
// caller waited: upgrading a read hold to a write hold would deadlock, and
// so would taking the read lock under the write lock. Curator allows the
// latter (a downgrade: since CURATOR-621 it creates the read node, not
// sequential, with the write node's sequence number, so that the read
// node stays ahead of writers that queued meanwhile); the RWMutex does
// not. To downgrade, Unlock and RLock: the reader queues behind any writer
// that is waiting by then.
//
// The holder is the handle, not a goroutine: goroutines that share an
// RWMutex share its read hold, and one of them that calls Lock while
// another holds the read side gets ErrOtherSideHeld. Goroutines that must
// exclude each other need an RWMutex each.
//
// # Fencing
//
// Token is, on either side, the czxid of the handle's node. Writers'
// tokens grow with every writer. A reader's token is larger than the token
// of every writer that held before its hold began, and smaller than that
// of every writer that holds after its hold began: a reader holds only
// once the writers ahead of it are gone, and writers behind it wait for
// it. Readers' tokens say nothing of each other (they hold together). A
// system that fences both sides keeps the largest writer's token it has
// accepted and the largest token of either side: it accepts a write whose
// token is at least the largest of all, and a read whose token is at least
// the largest writer's. So a writer whose hold was lost is refused once
// anyone who held after it has been accepted, and a reader once a writer
// who held after it has; a lost reader's read after other readers only is
// accepted, and harmless (nothing was written since).
type RWMutex struct {
	r, w     *Mutex
	readName string // the readers' node name
}

// WithRWNodeNames sets the node names of an RWMutex's readers and
// writers, written between the protected prefix and the sequence number;
// the defaults are DefaultReadNodeName and DefaultNodeName (kazoo's).
// WithRWNodeNames("__READ__", "__WRIT__") names nodes as Curator's
// InterProcessReadWriteLock does. Lock and TryLock of either side fail if
// read is empty or write ends in read (a writer's node would be taken for
// a reader's), and with zk.ErrInvalidPath if either contains '/'. It is
// an RWMutexOption only: NewMutex, NewElection and NewSemaphore do not
// take it.
func WithRWNodeNames(read, write string) RWMutexOption {
	return rwMutexOption(func(c *mutexConfig) { c.rwNames = &[2]string{read, write} })
}

// NewRWMutex returns an RWMutex for the lock whose nodes live under the
// directory path. The options apply to both sides: WithACL, WithNodeData,
// WithRetryTimeout, WithStatePollInterval, WithWakeHook (which the two
// sides may call concurrently), WithStateListener (which hears the changes
// of both sides, never concurrently, each side's in order; a handle holds
// one side at a time) and WithRWNodeNames. WithNodeName is no
// RWMutexOption (it would give both sides one name). Nothing is sent to
// ZooKeeper until Lock or TryLock of either side.
func NewRWMutex(conn Conn, path string, opts ...RWMutexOption) *RWMutex {
	given := defaultConfig()
	for _, opt := range opts {
		opt.applyRWMutex(&given)
	}
	read, write := DefaultReadNodeName, DefaultNodeName
	if given.rwNames != nil {
		read, write = given.rwNames[0], given.rwNames[1]
	}
	var bad error
	switch {
	case strings.Contains(read, "/") || strings.Contains(write, "/"):
		bad = zk.ErrInvalidPath
	case read == "":
		bad = errors.New("recipe: an RWMutex's read node name is empty")
	case strings.HasSuffix(write, read):
		bad = fmt.Errorf("recipe: an RWMutex's write node name %q ends in its read node name %q", write, read)
	}

	rw := &RWMutex{readName: read}
	side := func(name string, blockedBy func(string) bool, other func() *Mutex) mutexConfig {
		cfg := given
		cfg.nodeName = name
		cfg.blockedBy = blockedBy
		cfg.admit = func() error {
			if bad != nil {
				return bad
			}
			if s := other().State(); s == MutexHeld || s == MutexSuspended {
				return ErrOtherSideHeld
			}
			return nil
		}
		return cfg
	}
	isWriter := func(name string) bool { return !endsInSequence(name, read) }
	readCfg := side(read, isWriter, func() *Mutex { return rw.w })
	writeCfg := side(write, nil, func() *Mutex { return rw.r })
	if fn := given.listener; fn != nil {
		// Each side tells its own listener one change at a time; the two
		// sides share one, which must not be called concurrently either.
		// A channel, as Mutex.telling is, keeps a wait for it durable in a
		// synctest bubble.
		one := make(chan struct{}, 1)
		shared := func(s MutexState) {
			one <- struct{}{}
			defer func() { <-one }()
			fn(s)
		}
		readCfg.listener, writeCfg.listener = shared, shared
	}
	rw.r = newMutex(conn, path, readCfg)
	rw.w = newMutex(conn, path, writeCfg)
	return rw
}

// endsInSequence reports whether a child's name is nodeName followed by a
// sequence number as ZooKeeper prints it (ten digits, or a sign and nine
// or ten), after any prefix: how both kazoo and Curator tell the kinds of
// node apart, and how the RWMutex tells readers from writers.
func endsInSequence(name, nodeName string) bool {
	for _, width := range []int{sequenceDigits, sequenceDigits + 1} {
		stem := len(name) - width
		if stem < len(nodeName) || !strings.HasSuffix(name[:stem], nodeName) {
			continue
		}
		if _, ok := parseFormatted(name[stem:]); ok {
			return true
		}
	}
	return false
}

// Reads reports whether a child of the lock's directory (its name, or its
// path) is a reader's node: its name ends in the readers' node name and a
// sequence number. Every other contender is a writer.
func (rw *RWMutex) Reads(node string) bool {
	return endsInSequence(baseName(node), rw.readName)
}

// ReadLock returns the read side: a Mutex whose holders share the lock
// with each other and with nobody else. Its Lock, TryLock, Unlock, Token,
// Lost and State are the Mutex's (see RWMutex for what its Token means).
func (rw *RWMutex) ReadLock() *Mutex { return rw.r }

// WriteLock returns the write side: a Mutex whose holder holds the lock
// alone.
func (rw *RWMutex) WriteLock() *Mutex { return rw.w }

// RLock takes the read lock: ReadLock().Lock(ctx).
func (rw *RWMutex) RLock(ctx context.Context) error { return rw.r.Lock(ctx) }

// TryRLock takes the read lock only if no writer holds or waits for it:
// ReadLock().TryLock(ctx).
func (rw *RWMutex) TryRLock(ctx context.Context) (bool, error) { return rw.r.TryLock(ctx) }

// RUnlock releases one RLock: ReadLock().Unlock().
func (rw *RWMutex) RUnlock() error { return rw.r.Unlock() }

// Lock takes the write lock: WriteLock().Lock(ctx).
func (rw *RWMutex) Lock(ctx context.Context) error { return rw.w.Lock(ctx) }

// TryLock takes the write lock only if nobody holds or waits for the lock:
// WriteLock().TryLock(ctx).
func (rw *RWMutex) TryLock(ctx context.Context) (bool, error) { return rw.w.TryLock(ctx) }

// Unlock releases one Lock: WriteLock().Unlock().
func (rw *RWMutex) Unlock() error { return rw.w.Unlock() }

// Path returns the lock's directory, as given to NewRWMutex.
func (rw *RWMutex) Path() string { return rw.w.Path() }
