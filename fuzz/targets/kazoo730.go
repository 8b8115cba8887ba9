package targets

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/zkfake/zktest"
)

// python-zk/kazoo#730: kazoo's Lock (kazoo/recipe/lock.py, kazoo 2.9.0,
// the version the report names; 2.11.0 has the same code) ported line for
// line. Its _get_predecessor compares the sequence numbers it cuts from
// the names as strings, and ZooKeeper's counter is a signed int32 that
// wraps to "-2147483648". The same port serves kazoo#732 (the same
// version's _best_effort_cleanup) and, with the _get_predecessor of 2.8.0,
// kazoo#649.

func kazoo730() KnownBug {
	return KnownBug{
		Name:   "python-zk/kazoo#730",
		Title:  "Zookeeper sequence node overflow causes perpetual re-election",
		Recipe: "Lock, kazoo's lock recipe (kazoo.recipe.lock, kazoo 2.9.0)",
		Mechanism: "Lock._get_predecessor cuts the sequence number from each contender's name and keeps those with contender_sequence < node_sequence, comparing the strings ZooKeeper wrote. " +
			"Past the int32 wrap a node is named ...-2147483648, and \"-\" sorts before every digit: the new contender finds no contender less than itself and takes the lock from the holder of ...2147483647, and so does every contender after it (\"-2147483647\" > \"-2147483648\" as strings).",
		Schedule:  "no fault: the lock directory's sequence counter wraps while the lock is held, and another client calls acquire",
		Symptom:   "two clients hold the lock at once; after the wrap each new contender takes the lock (the report's \"perpetual re-election\")",
		Fixed:     "open upstream: python-zk/kazoo#731 (open since 2023-10-09) would compare int(sequence); the earlier report python-zk/kazoo#606 (2020, open) pointed at the same string comparison",
		Detectors: []fuzz.Detector{fuzz.MutualExclusion},
		// Only the wrap to "-2147483648" tells a sequence number past it:
		// the counter at "-1000000000" or "-0000000001" makes names
		// kazoo's regular expression does not take for a contender at all
		// (a nine-digit number after the sign), which is a bug of its own.
		Mark: "every directory's sequence counter starts at 214748364",
		Target: fuzz.Lock(func(conn zktest.Conn, dir string) fuzz.Locker {
			return &kazooLockUser{lock: newKazooLock(newKazooClient(conn, false), dir, kazooExclusive)}
		}),
		// The bug needs no fault; kazoo's Lock has others that do (a
		// cleanup delete lost, #732; a release that says nothing of a
		// lost node).
		Options: []fuzz.Option{fuzz.WithoutFaults(fuzz.AllFaults()...)},
	}
}

// kazooLockUser uses one kazoo Lock as kazoo's documentation does
// (lock = zk.Lock(path); with lock: ...): Lock is acquire(), with a
// timeout when ctx has a deadline and cancel() when ctx is done, and
// Unlock is release(). With tryOnce, TryLock is acquire(blocking=False).
type kazooLockUser struct {
	lock *kazooLock
	// fresh makes a new Lock for every acquire, as a worker does that
	// tries many locks in turn (kazoo#732's report); nil keeps one.
	fresh func() *kazooLock
	// client is the fresh locks' client (the kept lock's is its own).
	client *kazooClient
}

func (u *kazooLockUser) Lock(ctx context.Context) error {
	ok, err := u.acquire(ctx, true)
	if err == nil && !ok {
		// acquire returned False: its retry's deadline passed.
		err = errLockTimeout
	}
	return err
}

// TryLock is acquire(blocking=False).
func (u *kazooLockUser) TryLock(ctx context.Context) (bool, error) {
	return u.acquire(ctx, false)
}

func (u *kazooLockUser) acquire(ctx context.Context, blocking bool) (bool, error) {
	if u.fresh != nil {
		u.lock = u.fresh()
	}
	var timeout time.Duration
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), time.Millisecond)
	}
	stop := context.AfterFunc(ctx, u.lock.cancel)
	defer stop()
	return u.lock.acquire(blocking, timeout)
}

func (u *kazooLockUser) Unlock() error {
	_, err := u.lock.release()
	return err
}

// CloseClient is the process's KazooClient.stop() (fuzz.ClientCloser).
func (u *kazooLockUser) CloseClient() {
	if u.client != nil {
		u.client.stop()
	} else if u.lock != nil {
		u.lock.client.stop()
	}
}

// kazooLockKind is what tells Lock, WriteLock and ReadLock apart: the
// _NODE_NAME of its nodes and its _EXCLUDE_NAMES, the names that exclude
// it when their sequence number is lower.
type kazooLockKind struct {
	nodeName     string
	excludeNames []string
}

var (
	kazooExclusive = kazooLockKind{"__lock__", []string{"__lock__"}}
	kazooWriter    = kazooLockKind{"__lock__", []string{"__lock__", "__rlock__"}}
	kazooReader    = kazooLockKind{"__rlock__", []string{"__lock__"}}
)

// kazooLock is Lock (kazoo 2.9.0). Left out: contenders(), and the
// ephemeral=False and extra_lock_patterns options, which the harness never
// uses.
type kazooLock struct {
	client       *kazooClient
	path         string
	kind         kazooLockKind
	contendersRE *regexp.Regexp
	data         []byte
	wakeEvent    *kazooEvent
	prefix       string
	createPath   string
	retry        kazooRetry
	// acquireMethodLock is _acquire_method_lock (threading.Lock): a
	// channel, so that a goroutine waiting for it is durably blocked.
	acquireMethodLock chan struct{}
	// predecessor is _get_predecessor: 2.9.0's, or 2.8.0's for kazoo#649,
	// or what kazoo before 2.5 did in its place (kazoo429.go).
	predecessor func(l *kazooLock, node string) (string, error)
	// existsWatch: kazoo before 2.5 watched the predecessor with
	// exists(), and waited only if it was there (python-zk/kazoo
	// 9b0a793 moved to get() and NoNodeError).
	existsWatch bool

	mu          sync.Mutex // the fields below, which cancel() shares
	node        string
	createTried bool
	isAcquired  bool
	assuredPath bool
	cancelled   bool
}

func newKazooLock(client *kazooClient, dir string, kind kazooLockKind) *kazooLock {
	l := &kazooLock{
		client: client, path: dir, kind: kind,
		// r"(?:{patterns})(-?\d{10})$", the patterns in a set.
		contendersRE:      regexp.MustCompile(`(?:` + strings.Join(kind.excludeNames, "|") + `)(-?\d{10})$`),
		wakeEvent:         newKazooEvent(),
		retry:             lockRetry(client),
		acquireMethodLock: make(chan struct{}, 1),
		predecessor:       (*kazooLock).getPredecessor,
	}
	// "props to Netflix Curator for this trick": a uuid before the node
	// name, to find the node again after a create whose reply was lost.
	l.prefix = client.newPrefix() + kind.nodeName
	l.createPath = dir + "/" + l.prefix
	return l
}

func (l *kazooLock) ensurePath() error {
	if err := l.client.ensurePath(l.path); err != nil {
		return err
	}
	l.mu.Lock()
	l.assuredPath = true
	l.mu.Unlock()
	return nil
}

// cancel is Lock.cancel: cancel a pending acquire.
func (l *kazooLock) cancel() {
	l.mu.Lock()
	l.cancelled = true
	l.mu.Unlock()
	l.wakeEvent.Set()
}

// acquire is Lock.acquire(blocking, timeout), timeout 0 meaning None.
func (l *kazooLock) acquire(blocking bool, timeout time.Duration) (bool, error) {
	retry := l.retry
	retry.deadline = timeout

	// _acquire_method_lock.acquire(blocking=blocking, timeout=...).
	if !blocking {
		select {
		case l.acquireMethodLock <- struct{}{}:
		default:
			return false, nil
		}
	} else if timeout > 0 {
		t := time.NewTimer(timeout)
		select {
		case l.acquireMethodLock <- struct{}{}:
			t.Stop()
		case <-t.C:
			return false, nil
		}
	} else {
		l.acquireMethodLock <- struct{}{}
	}
	defer func() { <-l.acquireMethodLock }()

	l.mu.Lock()
	alreadyAcquired := l.isAcquired
	l.mu.Unlock()
	gotten := false
	err := retry.call(func() (err error) {
		gotten, err = l.innerAcquire(blocking, timeout)
		return err
	})
	switch {
	case errors.Is(err, errRetryFailed):
	case kazooException(err):
		// "if we did ultimately fail, attempt to clean up"
		if !alreadyAcquired {
			l.bestEffortCleanup()
			l.mu.Lock()
			l.cancelled = false
			l.mu.Unlock()
		}
		return false, err
	}
	if gotten {
		l.mu.Lock()
		l.isAcquired = true
		l.mu.Unlock()
	}
	if !gotten && !alreadyAcquired {
		l.bestEffortCleanup()
	}
	return gotten, nil
}

// watchSession is _watch_session, the listener a waiter adds.
func (l *kazooLock) watchSession(kazooState) { l.wakeEvent.Set() }

// innerAcquire is _inner_acquire.
func (l *kazooLock) innerAcquire(blocking bool, timeout time.Duration) (bool, error) {
	l.mu.Lock()
	isAcquired, assuredPath, createTried := l.isAcquired, l.assuredPath, l.createTried
	l.createTried = true
	l.mu.Unlock()
	// "wait until it's our chance to get it.."
	if isAcquired {
		if !blocking {
			return false, nil
		}
		return false, errForceRetry
	}
	// "make sure our election parent node exists"
	if !assuredPath {
		if err := l.ensurePath(); err != nil {
			return false, err
		}
	}
	node := ""
	if createTried {
		var err error
		if node, err = l.findNode(); err != nil {
			return false, err
		}
	}
	if node == "" {
		made, err := l.client.create(l.createPath, l.data, true, true)
		if err != nil {
			return false, err
		}
		// "strip off path to node"
		node = made[len(l.path)+1:]
	}
	l.mu.Lock()
	l.node = node
	l.mu.Unlock()

	for {
		l.wakeEvent.Clear()
		// "bail out with an exception if cancellation has been requested"
		l.mu.Lock()
		cancelled := l.cancelled
		l.mu.Unlock()
		if cancelled {
			return false, errCancelled
		}
		predecessor, err := l.predecessor(l, node)
		if err != nil {
			return false, err
		}
		if predecessor == "" {
			return true, nil
		}
		if !blocking {
			return false, nil
		}
		// "otherwise we are in the mix. watch predecessor and bide our time"
		predecessor = l.path + "/" + predecessor
		id := l.client.addListener(l.watchSession)
		if l.existsWatch {
			var there bool
			there, err = l.client.exists(predecessor, l.watchPredecessor)
			if err == nil && !there {
				err = zk.ErrNoNode
			}
		} else {
			_, err = l.client.get(predecessor, l.watchPredecessor)
		}
		switch {
		case errors.Is(err, zk.ErrNoNode):
			// "predecessor has already been deleted"
		case err != nil:
			l.client.removeListener(id)
			return false, err
		default:
			l.wakeEvent.Wait(l.client, timeout)
			if !l.wakeEvent.IsSet() {
				l.client.removeListener(id)
				return false, errLockTimeout
			}
		}
		l.client.removeListener(id)
	}
}

func (l *kazooLock) watchPredecessor(zk.Event) { l.wakeEvent.Set() }

// getPredecessor is _get_predecessor (2.9.0): the contender with the
// greatest sequence number less than the node's, the sequence numbers
// compared as the strings in the names.
func (l *kazooLock) getPredecessor(node string) (string, error) {
	nodeSequence := node[len(l.prefix):]
	children, err := l.client.getChildren(l.path)
	if err != nil {
		return "", err
	}
	foundSelf := false
	// "Filter out the contenders using the computed regex"
	var contenders [][2]string // the name, its sequence number
	for _, child := range children {
		if m := l.contendersRE.FindStringSubmatch(child); m != nil {
			// "Only consider contenders with a smaller sequence number."
			if m[1] < nodeSequence {
				contenders = append(contenders, [2]string{child, m[1]})
			}
		}
		if child == node {
			foundSelf = true
		}
	}
	if !foundSelf {
		// "somehow we aren't in the childrens -- probably we are
		// recovering from a session failure and our ephemeral node was
		// removed."
		return "", errForceRetry
	}
	if len(contenders) == 0 {
		return "", nil
	}
	// sorted(contender_matches, key=lambda m: m.groups()): by the
	// sequence string; Python's sort is stable, as SortStableFunc is.
	slices.SortStableFunc(contenders, func(a, b [2]string) int { return strings.Compare(a[1], b[1]) })
	return contenders[len(contenders)-1][0], nil
}

// findNode is _find_node: the child whose name starts with the prefix.
func (l *kazooLock) findNode() (string, error) {
	children, err := l.client.getChildren(l.path)
	if err != nil {
		return "", err
	}
	for _, child := range children {
		if strings.HasPrefix(child, l.prefix) {
			return child, nil
		}
	}
	return "", nil
}

func (l *kazooLock) deleteNode(node string) error { return l.client.delete(l.path + "/" + node) }

// bestEffortCleanup is _best_effort_cleanup: delete the node, once, and
// swallow any KazooException.
func (l *kazooLock) bestEffortCleanup() {
	l.mu.Lock()
	node := l.node
	l.mu.Unlock()
	if node == "" {
		var err error
		if node, err = l.findNode(); err != nil {
			return
		}
	}
	if node != "" {
		_ = l.deleteNode(node)
	}
}

// release is Lock.release: client.retry(_inner_release).
func (l *kazooLock) release() (bool, error) {
	var released bool
	err := commandRetry(l.client).call(func() (err error) { released, err = l.innerRelease(); return err })
	return released, err
}

// innerRelease is _inner_release: NoNode is no error.
func (l *kazooLock) innerRelease() (bool, error) {
	l.mu.Lock()
	isAcquired, node := l.isAcquired, l.node
	l.mu.Unlock()
	if !isAcquired {
		return false, nil
	}
	if err := l.deleteNode(node); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return false, err
	}
	l.mu.Lock()
	l.isAcquired, l.node = false, ""
	l.mu.Unlock()
	return true, nil
}
