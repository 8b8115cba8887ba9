package recipe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"
)

// acquireLocked takes a lease for Acquire, which holds the acquirers' lock:
// it tries, and while the leases are full waits for a change of the
// directory's children and tries again. relock means the lock was lost
// (its session expired, or its node was deleted) and Acquire must queue
// for it again; there is then no lease and no node.
//
// Only the lock's holder, in the session that holds it, runs this loop:
// each round starts by making sure the lock is still held so (see
// Mutex.heldSession), and attempt checks again between its create and its
// count. Two acquirers running it at once — one that lost the lock without
// noticing and the one that holds it now — can each count the other's
// node, find more than N, step back together and, their watched listings
// showing the room the other's deletion made, try again at once, in
// lockstep, for ever.
func (s *Semaphore) acquireLocked(ctx context.Context) (l *Lease, relock bool, err error) {
	for {
		// A round that never waits (the listing showed room at once)
		// must still end when ctx does.
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		session := s.lock.heldSession()
		if session == 0 {
			return nil, true, nil
		}
		l, again, err := s.attempt(ctx, session)
		switch {
		case err != nil:
			return nil, false, err
		case l != nil:
			return l, false, nil
		case again:
			// The node went before it was counted (an expired session
			// took the lock's node too; someone deleting only the lease
			// node did not), or the lock went: the next round tells.
			continue
		}
		// Full, and the node is deleted again: wait for room.
		if relock, err := s.awaitRoom(ctx, session); err != nil || relock {
			return nil, relock, err
		}
	}
}

// errLockGone is createLease's word, to attempt, that the acquirers' lock
// was lost before the create could be sent: nothing was created.
var errLockGone = errors.New("recipe: the acquirers' lock was lost")

// awaitRoom watches the directory's children and returns when they change,
// or at once if the watched listing already shows room (a lease released
// since the count: the watch then fires at the next attempt's own create,
// and nobody reads that event). relock means the lock, held in session,
// was lost meanwhile.
//
// Returning at once on room is sound only because the lock's holder is
// the one acquirer counting: room it did not make was made by a lease
// that went. Between two acquirers counting at once it is each other's
// deletion, and neither would ever wait (see acquireLocked).
func (s *Semaphore) awaitRoom(ctx context.Context, session int64) (relock bool, err error) {
	if s.lock.heldSession() != session {
		return true, nil
	}
	var children []string
	var watch <-chan zk.Event
	err = s.nodes.retryLoss(ctx, s.nodes.cfg.retryTimeout, func() (err error) {
		children, _, watch, err = s.conn.ChildrenW(s.dir)
		return err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		// The directory was deleted (ChildrenW sets no watch then): the
		// next attempt makes it again.
		return false, nil
	case errors.Is(err, zk.ErrSessionExpired):
		// The lock's node went with the session.
		return true, nil
	case err != nil:
		return false, err
	}
	if len(children) < s.max {
		return false, nil
	}
	var ev *zk.Event
	select {
	case e := <-watch:
		ev = &e
	case <-s.lock.Lost():
	case <-ctx.Done():
	}
	// Several may be ready at once and select picks one at random: the
	// cancellation wins whichever it picked, and then the loss of the lock.
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if ev == nil {
		return true, nil
	}
	if s.wakeHook != nil {
		s.wakeHook(*ev)
	}
	if ev.Type == zk.EventNotWatching {
		if errors.Is(ev.Err, zk.ErrClosing) {
			s.nodes.closed.Store(true)
			return false, errConnClosed
		}
		// The session expired, and the lock's node with it.
		return true, nil
	}
	return false, nil
}

// room reports, for TryAcquire, whether the leases held and the acquirers
// queued for the lock leave a lease free. Both listings follow a sync, so
// that a lagging follower's stale listing cannot make a free semaphore
// look full; the first also checks the directory's N if its data changed.
func (s *Semaphore) room(ctx context.Context) (bool, error) {
	var leases, queued []string
	var stat *zk.Stat
	err := s.nodes.retryLoss(ctx, s.nodes.cfg.retryTimeout, func() (err error) {
		if _, err = s.conn.Sync(s.dir); err != nil {
			return err
		}
		if leases, stat, err = s.conn.Children(s.dir); err != nil {
			return err
		}
		queued, _, err = s.conn.Children(s.lock.dir)
		if errors.Is(err, zk.ErrNoNode) {
			queued, err = nil, nil // nobody has queued yet
		}
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		// The directory was deleted: no lease is held, and the attempt
		// makes it again.
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if err := s.recheck(ctx, stat); err != nil {
		return false, err
	}
	return len(leases)+len(queueOrderIn(queued, s.lock.cfg.nodeName)) < s.max, nil
}

// attempt creates a lease node and counts the leases. It returns the Lease
// when they are at most N, its own included. Otherwise the node is deleted
// again and attempt returns no Lease: with again set if the node went
// before it was counted (its session expired, or someone deleted it), so
// that the caller tries anew; with neither again nor an error if the
// leases were full.
//
// lock is the session in which Acquire holds the acquirers' lock, 0 for
// TryAcquire, which holds none. Under a lock, attempt creates and counts
// only while the lock is held in that session (see Mutex.heldSession);
// once it is not, attempt creates nothing more, deletes a node it made,
// and returns again: the caller's lock check sends it back to the lock's
// line.
// The lease it takes is owned by that session too (see count).
func (s *Semaphore) attempt(ctx context.Context, lock int64) (l *Lease, again bool, err error) {
	node, err := s.createLease(ctx, lock)
	if errors.Is(err, errLockGone) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	return s.count(ctx, node, lock)
}

// createLease creates a lease node named by a new GUID. A create whose
// reply was lost is repeated under the same name: ErrNodeExists then means
// the first was applied (count checks whose session owns the node). A
// missing directory is made again, with N as its data. Under a lock (see
// attempt) every create is sent only while the lock is held in that
// session, and errLockGone returned once it is not.
func (s *Semaphore) createLease(ctx context.Context, lock int64) (string, error) {
	node := joinPath(s.dir, newGUID())
	lossy := false
	dirTries := 0
	var troubleSince time.Time
	backoff := firstBackoff
	var evidence closeEvidence
	fail := func(err error) (string, error) {
		if lossy {
			// A create whose reply was lost may have been applied, and
			// could not be asked again before giving up.
			s.nodes.adopt(orphan{node: node})
		}
		return "", err
	}
	for {
		if s.nodes.closed.Load() {
			return "", errConnClosed
		}
		if lock != 0 && s.lock.heldSession() != lock {
			return fail(errLockGone)
		}
		_, err := s.conn.Create(node, s.nodes.cfg.data, zk.FlagEphemeral, s.nodes.cfg.acl)
		if evidence.failed(err, &s.nodes.closed); s.nodes.closed.Load() {
			// Closing the session deletes the node, if it was made.
			return "", errConnClosed
		}
		switch {
		case err == nil:
			return node, nil
		case errors.Is(err, zk.ErrNodeExists) && lossy:
			return node, nil
		case errors.Is(err, zk.ErrNodeExists):
			// Someone else's node has this name (a GUID does not repeat
			// by chance; a node made by hand might): take another.
			node = joinPath(s.dir, newGUID())
			continue
		case errors.Is(err, zk.ErrNoNode) && dirTries < 3:
			// Someone may delete the directory again between our creates;
			// a few rounds tell a race from a directory that cannot stay.
			dirTries++
			if err := s.makeDir(ctx); err != nil {
				return fail(err)
			}
			continue
		case IsConnectionLoss(err):
			lossy = true
		case errors.Is(err, zk.ErrSessionExpired) && lock != 0:
			// The node, if made, went with the session, and so did the
			// lock's node, if the lock was still held in it.
			return fail(errLockGone)
		case errors.Is(err, zk.ErrSessionExpired):
			// The node, if made, went with the session; go-zookeeper is
			// opening a new one, in which the create is simply repeated.
		default:
			return fail(err)
		}
		now := time.Now()
		if troubleSince.IsZero() {
			troubleSince = now
		}
		if now.Sub(troubleSince) >= s.nodes.cfg.retryTimeout {
			return fail(err)
		}
		if ctxErr := pause(ctx, backoff); ctxErr != nil {
			return fail(fmt.Errorf("%w (while creating the lease node: %w)", ctxErr, err))
		}
		evidence.paused(s.conn, &s.nodes.closed)
		backoff = min(2*backoff, maxBackoff)
	}
}

// count lists the directory after node's create and takes the lease if the
// leases, node included, are at most N; otherwise it deletes node. See
// attempt for what it returns, and for lock.
//
// The listing comes first and the GetW on the own node only for a lease:
// a node counted over N is deleted without a watch set on it. The owner
// check after the listing is enough to trust it: a node the current
// session owns was created in this session, so a listing that shows it was
// made after its create, which is what the count needs.
func (s *Semaphore) count(ctx context.Context, node string, lock int64) (l *Lease, again bool, err error) {
	if lock != 0 && s.lock.heldSession() != lock {
		// The lock went since the check before the create, which may
		// have gone out on a new session: give the node up uncounted.
		// Past this check the lock's session was the current one after
		// the create, so a node the owner check below finds to be the
		// current session's is the lock's session's too: sessions do not
		// come back.
		_, again, err := s.nodes.startOver(node)
		return nil, again, err
	}
	var children []string
	var stat *zk.Stat
	err = s.nodes.retryLoss(ctx, s.nodes.cfg.retryTimeout, func() (err error) {
		children, stat, err = s.conn.Children(s.dir)
		return err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		// The directory is gone, so the node is too (a directory with
		// children cannot be deleted).
		return nil, true, nil
	case err != nil:
		_, again, err := s.nodes.abandon(node, err)
		return nil, again, err
	}
	if err := s.recheck(ctx, stat); err != nil {
		if cerr := s.nodes.cleanup(node); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, false, err
	}
	if !slices.Contains(children, baseName(node)) {
		return nil, true, nil
	}
	if len(children) > s.max {
		if err := s.nodes.cleanup(node); err != nil {
			return nil, false, err
		}
		return nil, false, nil
	}
	exists, own, self, err := s.nodes.watchOwn(ctx, node)
	switch {
	case err != nil:
		_, again, err := s.nodes.abandon(node, err)
		return nil, again, err
	case !exists:
		return nil, true, nil
	case own.EphemeralOwner != s.conn.SessionID():
		// Our GUID, but a session that has expired: the node is about to
		// vanish, and a lease on it would be gone with it while we count
		// it as ours (CURATOR-498, -604).
		_, again, err := s.nodes.startOver(node)
		return nil, again, err
	}
	return s.newLease(node, own, self), false, nil
}

// newLease starts holding node, whose stat is own and whose watch is self,
// as a Mutex starts holding its lock: the Lease's own Mutex watches it.
func (s *Semaphore) newLease(node string, own *zk.Stat, self <-chan zk.Event) *Lease {
	m := newMutex(s.conn, s.dir, s.leaseCfg)
	h := &hold{
		node:    node,
		guid:    baseName(node),
		token:   own.Czxid,
		session: own.EphemeralOwner,
		self:    self,
		count:   1,
		state:   MutexHeld,
		lost:    make(chan struct{}),
	}
	m.hold = h
	m.watch(h)
	return &Lease{m: m, node: node, lost: h.lost}
}

// recheck checks the directory's N again if stat, from a listing of the
// directory, shows that its data changed, or that it is not the directory
// last checked, since the last check.
func (s *Semaphore) recheck(ctx context.Context, stat *zk.Stat) error {
	s.mu.Lock()
	same := s.checked && stat.Czxid == s.dirCzxid && stat.Version == s.dirVersion
	s.mu.Unlock()
	if same {
		return nil
	}
	return s.checkDir(ctx)
}

// checkDir reads the directory's data and refuses an N other than the
// Semaphore's. A missing directory is made, with N as its data.
func (s *Semaphore) checkDir(ctx context.Context) error {
	for tries := 0; ; tries++ {
		var data []byte
		var stat *zk.Stat
		err := retryWhile(ctx, s.conn, &s.nodes.closed, s.nodes.cfg.retryTimeout, readLoss, func() (err error) {
			data, stat, err = s.conn.Get(s.dir)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) && tries < 3 {
			if err := s.makeDir(ctx); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if n, ok := recordedMaxLeases(data); ok && n != int64(s.max) {
			// Checked again next time: the data may be put right.
			s.checked = false
			return fmt.Errorf("%w: %s records %d, this Semaphore has %d", ErrMaxLeasesMismatch, s.dir, n, s.max)
		}
		s.checked, s.dirCzxid, s.dirVersion = true, stat.Czxid, stat.Version
		return nil
	}
}

// makeDir creates the semaphore's directory, with N as its data, and its
// missing ancestors, persistent and empty. A node made meanwhile by
// someone else is fine: checkDir reads what it holds.
func (s *Semaphore) makeDir(ctx context.Context) error {
	for _, p := range ancestors(s.dir) {
		var data []byte
		if p == s.dir {
			data = []byte(strconv.Itoa(s.max))
		}
		err := s.nodes.retryLoss(ctx, s.nodes.cfg.retryTimeout, func() error {
			_, err := s.conn.Create(p, data, 0, s.nodes.cfg.acl)
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}
