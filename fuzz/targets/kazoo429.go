package targets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/zkfake/zktest"
)

// python-zk/kazoo#429: kazoo's Semaphore (kazoo/recipe/lock.py as it was
// in the fix's parent, python-zk/kazoo a674322^, April 2017: kazoo 2.2.1
// with the commits of its branch, python-zk/kazoo#358's cleanup among
// them) with the Lock it takes on "<path>-__lock__",
// that version's Lock, and that version's client, which fails a request
// made while it reconnects with SessionExpiredError and forgets its
// watchers at a connection loss. The Lock is kazoo730.go's port with
// what that version did differently: it sorts the whole directory by what
// follows "__lock__", takes the lock at index 0, watches the node before
// its own with exists(), and retries with KazooRetry's max_delay of an
// hour.

func kazoo429() KnownBug {
	return KnownBug{
		Name:   "python-zk/kazoo#429",
		Title:  "Semaphore deadlock on nonblocking acquiring",
		Recipe: "Semaphore, kazoo's counting semaphore (kazoo.recipe.lock, kazoo 2.2.1 and its branch up to the fix, a674322^)",
		Mechanism: "Every acquire takes a Lock on <path>-__lock__ first, with the semaphore's blocking and timeout; a Lock acquire that does not get it (blocking=False while another acquirer is inside, a timeout) deletes its node in _best_effort_cleanup, once, swallowing any error. " +
			"When that delete is lost with the connection and the session resumes, the Lock's node stays, with nobody to delete it: once the acquirer inside leaves, the zombie node is first, and no acquire ever gets the inner lock, so nobody gets a lease again.",
		Schedule:  "an acquire's inner Lock finds another acquirer inside (a TryAcquire, or an Acquire whose deadline passes), and the delete of its node is lost with the connection while the session lives on",
		Symptom:   "every later acquire waits for ever (or, non-blocking, fails) behind a zombie node in <path>-__lock__, though leases are free",
		Fixed:     "closed by python-zk/kazoo#430 (kazoo 2.3.0), which moved the inner Lock's acquire into the try whose finally releases it; but Lock.release deletes only a lock it acquired, so the zombie of a swallowed cleanup stays possible (python-zk/kazoo#732, open, is the same cleanup in Lock)",
		Detectors: []fuzz.Detector{fuzz.Liveness, fuzz.Leak},
		Mark:      "'s delete /semaphores/imports-__lock__/",
		Target:    Semaphore(newKazooSemaphore),
		// Semaphore.cancel does not reach the inner Lock, so a cancelled
		// Acquire waits in it until the lock comes (a cancel fault trips
		// that, not this bug); its is_acquired stays True after the
		// session is LOST (the state report); a lease's create whose
		// reply is lost fails the acquire with NodeExistsError and the
		// cleanup deletes the lease; a process that closes its client
		// (stop(), fuzz.ClientCloser) leads to the semaphore's other
		// findings first (a herd on the inner lock, an acquire that
		// never returns, a release the model refuses); and a delete from outside
		// of a lease or a lock node lets more acquirers in.
		// None of these is this bug.
		Options: []fuzz.Option{fuzz.WithoutFaults(fuzz.Cancel, fuzz.Close, fuzz.OutsideWrite), fuzz.WithoutDetectors(fuzz.StateReport)},
	}
}

// newKazooSemaphore is the NewLeaser of kazoo's Semaphore: one per client,
// made once, as kazoo's documentation makes it.
func newKazooSemaphore(conn zktest.Conn, path string, max int) Leaser {
	client := newKazooClient(conn, true)
	client.failWhileConnecting = true
	return &kazooSemaphoreUser{s: newKazooSemaphoreV22(client, path, max)}
}

// kazooSemaphoreUser is a Leaser of a kazoo Semaphore: Acquire is
// acquire(), with a timeout when ctx has a deadline and cancel() when ctx
// is done; TryAcquire is acquire(blocking=False); the lease is the
// Semaphore itself, its node create_path.
type kazooSemaphoreUser struct{ s *kazooSemaphore }

// CloseClient is the process's KazooClient.stop() (fuzz.ClientCloser).
func (u *kazooSemaphoreUser) CloseClient() { u.s.client.stop() }

func (u *kazooSemaphoreUser) Acquire(ctx context.Context) (Lease, error) {
	ok, err := u.acquire(ctx, true)
	if err == nil && !ok {
		err = errLockTimeout
	}
	if err != nil {
		return nil, err
	}
	return kazooLease{u.s}, nil
}

func (u *kazooSemaphoreUser) TryAcquire(ctx context.Context) (Lease, bool, error) {
	ok, err := u.acquire(ctx, false)
	if !ok || err != nil {
		return nil, false, err
	}
	return kazooLease{u.s}, true, nil
}

func (u *kazooSemaphoreUser) acquire(ctx context.Context, blocking bool) (bool, error) {
	var timeout time.Duration
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), time.Millisecond)
	}
	stop := context.AfterFunc(ctx, u.s.cancel)
	defer stop()
	return u.s.acquire(blocking, timeout)
}

// kazooLease is a Semaphore that holds, as a Lease.
type kazooLease struct{ s *kazooSemaphore }

func (l kazooLease) Node() string { return l.s.createPath }

// Held is is_acquired.
func (l kazooLease) Held() bool {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	return l.s.isAcquired
}

func (l kazooLease) Release() error {
	_, err := l.s.release()
	return err
}

// kazooSemaphore is Semaphore. Left out: lease_holders().
type kazooSemaphore struct {
	client     *kazooClient
	path       string
	data       []byte
	maxLeases  int
	wakeEvent  *kazooEvent
	createPath string
	lockPath   string

	mu             sync.Mutex // the fields below, which the listener and cancel() share
	isAcquired     bool
	assuredPath    bool
	cancelled      bool
	sessionExpired bool
	listener       int // _watch_session's listener id, 0 when not added
}

func newKazooSemaphoreV22(client *kazooClient, path string, maxLeases int) *kazooSemaphore {
	return &kazooSemaphore{
		client: client, path: path, maxLeases: maxLeases, wakeEvent: newKazooEvent(),
		// self.path + "/" + uuid.uuid4().hex
		createPath: path + "/" + client.newPrefix(),
		lockPath:   path + "-" + "__lock__",
	}
}

// ensurePath is Semaphore._ensure_path: the max_leases check against the
// node's data.
func (s *kazooSemaphore) ensurePath() error {
	existed, err := s.client.ensurePathExisted(s.path)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.assuredPath = true
	s.mu.Unlock()
	if existed {
		data, err := s.client.get(s.path, nil)
		if err != nil {
			return err
		}
		// "ignore non-numeric data"
		if leases, err := strconv.Atoi(string(data)); err == nil && leases != s.maxLeases {
			return fmt.Errorf("ValueError: inconsistent max leases: %d, expected: %d", leases, s.maxLeases)
		}
		return nil
	}
	return s.client.set(s.path, []byte(strconv.Itoa(s.maxLeases)))
}

// cancel is Semaphore.cancel: it wakes the semaphore's own wait, not the
// inner Lock's.
func (s *kazooSemaphore) cancel() {
	s.mu.Lock()
	s.cancelled = true
	s.mu.Unlock()
	s.wakeEvent.Set()
}

// acquire is Semaphore.acquire, timeout 0 meaning None.
func (s *kazooSemaphore) acquire(blocking bool, timeout time.Duration) (bool, error) {
	// "If the semaphore had previously been canceled, make sure to reset
	// that state."
	s.mu.Lock()
	s.cancelled = false
	s.mu.Unlock()
	var acquired bool
	err := commandRetry(s.client).call(func() (err error) { acquired, err = s.innerAcquire(blocking, timeout); return err })
	if kazooException(err) {
		// "if we did ultimately fail, attempt to clean up"
		s.bestEffortCleanup()
		s.mu.Lock()
		s.cancelled = false
		s.mu.Unlock()
		return false, err
	}
	s.mu.Lock()
	s.isAcquired = acquired
	s.mu.Unlock()
	return acquired, nil
}

// innerAcquire is Semaphore._inner_acquire before the fix: the inner
// Lock's acquire outside the try whose finally releases it.
func (s *kazooSemaphore) innerAcquire(blocking bool, timeout time.Duration) (bool, error) {
	s.mu.Lock()
	s.sessionExpired = false
	assured := s.assuredPath
	s.mu.Unlock()
	// add_listener(self._watch_session): the client keeps its listeners
	// in a set, so the one bound method is there once, until it
	// de-registers itself on LOST.
	s.mu.Lock()
	if s.listener == 0 {
		s.listener = s.client.addListener(s.watchSession)
	}
	s.mu.Unlock()
	if !assured {
		if err := s.ensurePath(); err != nil {
			return false, err
		}
	}
	// "Do we already have a lease?"
	if ok, err := s.client.exists(s.createPath, nil); err != nil || ok {
		return ok, err
	}
	start := time.Now()
	leftover := func() time.Duration { // _Watch.leftover, 0 for None
		if timeout == 0 {
			return 0
		}
		return max(timeout-time.Since(start), time.Nanosecond)
	}
	lock := newKazooLock22(s.client, s.lockPath, s.data)
	gotten, err := lock.acquire(blocking, leftover())
	if err != nil {
		return false, err
	}
	if !gotten {
		return false, nil
	}
	defer func() { _, _ = lock.release() }()
	for {
		s.wakeEvent.Clear()
		// "Attempt to grab our lease..."
		ok, err := s.getLease()
		if err != nil || ok {
			return ok, err
		}
		if !blocking {
			return false, nil
		}
		// "If blocking, wait until self._watch_lease_change() is called
		// before returning"
		s.wakeEvent.Wait(s.client, leftover())
		if !s.wakeEvent.IsSet() {
			return false, errLockTimeout
		}
	}
}

// watchSession is Semaphore._watch_session.
func (s *kazooSemaphore) watchSession(state kazooState) {
	if state != kazooLost {
		return
	}
	s.mu.Lock()
	s.sessionExpired = true
	id := s.listener
	s.listener = 0
	s.mu.Unlock()
	s.wakeEvent.Set()
	// "Return true to de-register"
	s.client.removeListener(id)
}

// getLease is Semaphore._get_lease.
func (s *kazooSemaphore) getLease() (bool, error) {
	s.mu.Lock()
	expired, cancelled := s.sessionExpired, s.cancelled
	s.mu.Unlock()
	if expired {
		return false, errForceRetry // "Retry on session loss at top"
	}
	if cancelled {
		return false, errCancelled
	}
	children, err := s.client.getChildrenW(s.path, func(zk.Event) { s.wakeEvent.Set() })
	if err != nil {
		return false, err
	}
	// "If there are leases available, acquire one"
	if len(children) < s.maxLeases {
		if _, err := s.client.create(s.createPath, s.data, true, false); err != nil {
			return false, err
		}
	}
	// "Check if our acquisition was successful or not."
	ok, err := s.client.exists(s.createPath, nil)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	s.isAcquired = ok
	s.mu.Unlock()
	return ok, nil
}

// bestEffortCleanup is Semaphore._best_effort_cleanup.
func (s *kazooSemaphore) bestEffortCleanup() { _ = s.client.delete(s.createPath) }

// release is Semaphore.release: client.retry(_inner_release).
func (s *kazooSemaphore) release() (bool, error) {
	var released bool
	err := commandRetry(s.client).call(func() (err error) { released, err = s.innerRelease(); return err })
	return released, err
}

func (s *kazooSemaphore) innerRelease() (bool, error) {
	s.mu.Lock()
	held := s.isAcquired
	s.mu.Unlock()
	if !held {
		return false, nil
	}
	if err := s.client.delete(s.createPath); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return false, err
	}
	s.mu.Lock()
	s.isAcquired = false
	s.mu.Unlock()
	return true, nil
}

// newKazooLock22 is client.Lock(path, identifier) as kazoo 2.2.1 made it.
func newKazooLock22(client *kazooClient, dir string, data []byte) *kazooLock {
	l := newKazooLock(client, dir, kazooExclusive)
	l.data = data
	l.predecessor = kazooLockPredecessor22
	l.existsWatch = true
	// KazooRetry(max_tries=None): its max_delay was 3600 s then.
	l.retry.maxDelay = time.Hour
	return l
}

// kazooLockPredecessor22 is what Lock._inner_acquire did in kazoo 2.2.1
// in place of _get_predecessor: _get_sorted_children (every child, sorted
// by what follows "__lock__" in its name), the node's index among them
// (ForceRetryError if it is not there), and the child before it unless
// the index is 0 (acquired_lock).
func kazooLockPredecessor22(l *kazooLock, node string) (string, error) {
	children, err := kazooSortedChildren(l.client, l.path, l.kind.nodeName)
	if err != nil {
		return "", err
	}
	i := slices.Index(children, node)
	if i < 0 {
		return "", errForceRetry
	}
	if i == 0 {
		return "", nil
	}
	return children[i-1], nil
}

// kazooSortedChildren is Lock._get_sorted_children before kazoo 2.5: every
// child of the directory, sorted by what follows lockname in its name.
func kazooSortedChildren(client *kazooClient, dir, lockname string) ([]string, error) {
	children, err := client.getChildren(dir)
	if err != nil {
		return nil, err
	}
	// "can't just sort directly: the node names are prefixed by uuids"
	key := func(c string) string {
		// c[c.find(lockname) + len(lockname):], find returning -1 when
		// the name is not there.
		i := strings.Index(c, lockname)
		return c[min(i+len(lockname), len(c)):]
	}
	slices.SortStableFunc(children, func(a, b string) int { return strings.Compare(key(a), key(b)) })
	return children, nil
}
