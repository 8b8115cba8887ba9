package targets

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/zkfake/zktest"
)

// python-zk/kazoo#170: kazoo's Lock (kazoo/recipe/lock.py, kazoo 1.3.1, the
// last release before the fix) over kazoo 1.3.1's client, which forgets
// every watcher when the connection goes (KazooClient._reset_watchers)
// and fails a request made while it reconnects with SessionExpiredError.
// The waiter's one way to learn that the node ahead went is its watch; a
// connection loss or an expiry takes the watch, and nothing makes the
// waiter look again. #170 is the pull request: its description is the
// report, and no issue of its own was filed.

func kazoo170() KnownBug {
	return KnownBug{
		Name:   "python-zk/kazoo#170",
		Title:  "Fix Lock deadlock on CONNECTED->SUSPENDED->CONNECTED state change",
		Recipe: "Lock, kazoo's lock recipe (kazoo.recipe.lock, kazoo 1.3.1)",
		Mechanism: "A waiting acquire sets an exists() watch on the node ahead of its own and waits on its wake_event; kazoo's client drops every watcher when its connection goes, SUSPENDED or LOST, without calling it. " +
			"Nothing else sets the event, so a waiter whose connection blipped, or whose session expired with its node, never looks at the directory again, though the node ahead goes or its own is gone.",
		Schedule:  "a client waits for the lock and its session expires (or its connection is lost and comes back) while it waits; the holder then releases",
		Symptom:   "the waiter's acquire never returns; with its session expired, its node is gone and the lock is free, and every other contender may acquire past it, while it waits for ever",
		Fixed:     "fixed in kazoo 2.0 (python-zk/kazoo#170, merged 2014-02): the waiter adds a connection-state listener that sets wake_event on any change, so it lists the directory again",
		Detectors: []fuzz.Detector{fuzz.Liveness},
		// An expiry the waiter learns of: the report's own test expires
		// the session.
		Mark: "learns that its session",
		Target: fuzz.Lock(func(conn zktest.Conn, dir string) fuzz.Locker {
			client := newKazooClient(conn, true)
			client.failWhileConnecting = true
			return &kazooLock13User{lock: newKazooLock13(client, dir)}
		}),
		// The bug needs an expiry, or a connection lost and back; Lock
		// 1.3.1 has other bugs under the other faults: a cleanup delete
		// lost with the connection leaves its node (#732's mechanism,
		// older), and a delete from outside of the holder's node lets
		// two hold. It sorts by the sequence numbers as strings, which
		// the wrap breaks, and takes any child for a contender.
		Options: []fuzz.Option{
			fuzz.WithoutFaults(fuzz.LostRequest, fuzz.LostReply, fuzz.Crash, fuzz.LaggingFollower, fuzz.Close, fuzz.Cancel, fuzz.OutsideWrite, fuzz.QuorumLoss, fuzz.LateEvent),
			fuzz.WithoutSequenceWrap(), fuzz.WithoutForeignChildren(),
		},
	}
}

// kazooLock13User uses one Lock as the report's program does (with lock:
// ... in a loop): Lock is acquire(), with a timeout when ctx has a
// deadline and cancel() when ctx is done; Unlock is release().
type kazooLock13User struct{ lock *kazooLock13 }

func (u *kazooLock13User) Lock(ctx context.Context) error {
	var timeout time.Duration
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), time.Millisecond)
	}
	stop := context.AfterFunc(ctx, u.lock.cancel)
	defer stop()
	ok, err := u.lock.acquire(true, timeout)
	if err == nil && !ok {
		err = errLockTimeout
	}
	return err
}

func (u *kazooLock13User) Unlock() error {
	_, err := u.lock.release()
	return err
}

// kazooLock13 is Lock (kazoo 1.3.1). Left out: contenders().
type kazooLock13 struct {
	client     *kazooClient
	path       string
	data       []byte
	wakeEvent  *kazooEvent
	prefix     string
	createPath string
	retry      kazooRetry

	mu          sync.Mutex // the fields below, which cancel() shares
	node        string
	createTried bool
	isAcquired  bool
	assuredPath bool
	cancelled   bool
}

// kazooLock13Name is _NODE_NAME.
const kazooLock13Name = "__lock__"

func newKazooLock13(client *kazooClient, dir string) *kazooLock13 {
	l := &kazooLock13{client: client, path: dir, wakeEvent: newKazooEvent(),
		// KazooRetry(max_tries=None): max_delay 3600 s in 1.3.1.
		retry: kazooRetry{client: client, delay: 100 * time.Millisecond, maxDelay: time.Hour}}
	l.prefix = client.newPrefix() + kazooLock13Name
	l.createPath = dir + "/" + l.prefix
	return l
}

func (l *kazooLock13) cancel() {
	l.mu.Lock()
	l.cancelled = true
	l.mu.Unlock()
	l.wakeEvent.Set()
}

// acquire is Lock.acquire (1.3.1).
func (l *kazooLock13) acquire(blocking bool, timeout time.Duration) (bool, error) {
	retry := l.retry
	retry.deadline = timeout
	var acquired bool
	err := retry.call(func() (err error) { acquired, err = l.innerAcquire(blocking, timeout); return err })
	if kazooException(err) {
		// "if we did ultimately fail, attempt to clean up" (RetryFailedError
		// is a KazooException, and is caught here first).
		l.bestEffortCleanup()
		l.mu.Lock()
		l.cancelled = false
		l.mu.Unlock()
		return false, err
	}
	l.mu.Lock()
	l.isAcquired = acquired
	l.mu.Unlock()
	if !acquired {
		l.mu.Lock()
		node := l.node
		l.mu.Unlock()
		if err := l.client.delete(l.path + "/" + node); err != nil {
			return false, err
		}
	}
	return acquired, nil
}

// innerAcquire is _inner_acquire (1.3.1): no connection listener.
func (l *kazooLock13) innerAcquire(blocking bool, timeout time.Duration) (bool, error) {
	l.mu.Lock()
	assured, createTried := l.assuredPath, l.createTried
	l.createTried = true
	l.mu.Unlock()
	// "make sure our election parent node exists"
	if !assured {
		if err := l.client.ensurePath(l.path); err != nil {
			return false, err
		}
		l.mu.Lock()
		l.assuredPath = true
		l.mu.Unlock()
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
		node = made[len(l.path)+1:]
	}
	l.mu.Lock()
	l.node = node
	l.mu.Unlock()
	for {
		l.wakeEvent.Clear()
		l.mu.Lock()
		cancelled := l.cancelled
		l.mu.Unlock()
		if cancelled {
			return false, errCancelled
		}
		children, err := kazooSortedChildren(l.client, l.path, kazooLock13Name)
		if err != nil {
			return false, err
		}
		i := slices.Index(children, node)
		if i < 0 {
			// "somehow we aren't in the children -- probably we are
			// recovering from a session failure and our ephemeral node
			// was removed"
			return false, errForceRetry
		}
		if i == 0 { // acquired_lock
			return true, nil
		}
		if !blocking {
			return false, nil
		}
		// "otherwise we are in the mix. watch predecessor and bide our
		// time"
		predecessor := l.path + "/" + children[i-1]
		there, err := l.client.exists(predecessor, func(zk.Event) { l.wakeEvent.Set() })
		if err != nil {
			return false, err
		}
		if there {
			l.wakeEvent.Wait(l.client, timeout)
			if !l.wakeEvent.IsSet() {
				return false, errLockTimeout
			}
		}
	}
}

func (l *kazooLock13) findNode() (string, error) {
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

// bestEffortCleanup is _best_effort_cleanup (1.3.1): the node found by
// its prefix, deleted once, any KazooException swallowed.
func (l *kazooLock13) bestEffortCleanup() {
	node, err := l.findNode()
	if err == nil && node != "" {
		_ = l.client.delete(l.path + "/" + node)
	}
}

// release is Lock.release: client.retry(_inner_release).
func (l *kazooLock13) release() (bool, error) {
	var released bool
	err := commandRetry(l.client).call(func() error {
		l.mu.Lock()
		held, node := l.isAcquired, l.node
		l.mu.Unlock()
		if !held {
			released = false
			return nil
		}
		if err := l.client.delete(l.path + "/" + node); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		l.mu.Lock()
		l.isAcquired, l.node = false, ""
		l.mu.Unlock()
		released = true
		return nil
	})
	return released, err
}
