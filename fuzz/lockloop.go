package fuzz

import (
	"errors"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/recipe"
)

// This file is the lock loop: a lock client's goroutine (Lock, critical
// section, Unlock) and the harness's books at each point of it.

// run is the client loop: Lock, critical section, Unlock, again and again,
// stopping at points where the harness keeps its books.
func (inc *incarnation) run(newLocker NewLocker) {
	defer close(inc.done)
	defer inc.notePanic()
	inc.markLoop()
	inc.locker = newLocker(inc.user, lockPath)
	for {
		lock := &request{point: pointLock}
		if !inc.wait(lock) {
			return
		}
		got, err := inc.lock(lock.how)
		// What the hold is — its session, its token — is read the
		// moment Lock returns: by the time the harness lets the client
		// on, the session may have expired and been replaced.
		locked := &request{point: pointLocked, err: err, got: got, how: lock.how, session: inc.conn.SessionID()}
		if f, ok := inc.locker.(Fencer); ok && got {
			locked.token = f.Token()
		}
		if !inc.wait(locked) {
			return
		}
		if !got {
			if q, ok := inc.locker.(QueueReader); ok && lock.how == howTry && err == nil {
				// Who is ahead? The listing is a call like any other,
				// and the story shows its answer.
				_, _ = q.Contenders()
			}
			continue
		}
		if inc.fencing && !inc.wait(&request{point: pointWrite}) {
			return
		}
		unlock := &request{point: pointUnlock}
		for {
			if !inc.wait(unlock) {
				return
			}
			if unlock.how != howReenter {
				break
			}
			// Still holding: a reentrant Lock and Unlock pair, as nested
			// code that takes the same lock does.
			err := inc.locker.Lock(inc.ctx)
			if !inc.wait(&request{point: pointReentered, err: err}) {
				return
			}
			err = inc.locker.Unlock()
			if !inc.wait(&request{point: pointReleft, err: err}) {
				return
			}
			unlock = &request{point: pointUnlock}
		}
		w := unlock.how
		for attempt := 1; ; attempt++ {
			err := inc.unlock(w)
			unlocked := &request{point: pointUnlocked, err: err, how: w}
			if !inc.wait(unlocked) {
				return
			}
			// The harness says, with how, whether a failed Unlock is
			// tried again (plainly) or left pending while the client
			// moves on to its next Lock.
			if err == nil || attempt == unlockAttempts || releaseSettled(err) || unlocked.how == howGiveUp {
				break
			}
			w = howPlain
		}
	}
}

// releaseSettled reports whether an Unlock error says the hold is gone (so
// there is nothing to retry), rather than that the release may not have
// happened.
func releaseSettled(err error) bool {
	return errors.Is(err, recipe.ErrLockLost) || errors.Is(err, zk.ErrNotLocked) ||
		errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrNoNode)
}

// onPoint keeps the books at a point of s's loop and says whether the
// client goes on.
func (h *harness) onPoint(s *slot, r *request) bool {
	if r.point >= pointOp {
		return h.onOpPoint(s, r)
	}
	inc := s.inc
	switch r.point {
	case pointLock:
		if h.stopping {
			inc.exited = true
			h.note("%s is done and stops", s.name())
			return false
		}
		if h.replaceClosed(s) {
			return false
		}
		r.how = inc.lockFor(h.how)
		if inc.closed {
			// The one Lock after the Close has no deadline of its own:
			// it must fail at once all the same.
			inc.locksAfterClose++
			r.how = howPlain
		}
		s.callSessions = s.callSessions[:0]
		s.noteCallSession(inc.conn.SessionID())
		s.phase, s.revoked = phaseLocking, false
		s.acquireCall = h.rec.Now()
		s.polls, s.lastOK = 0, false
		h.note("%s calls %s%s", s.name(), r.how.lockCall(), describePath(inc.locker))

	case pointLocked:
		// Lock returned when the client registered this point, at the
		// end of that instant: after everything the harness did then.
		s.phase = phaseIdle
		ret := h.returned(r.at)
		in := linearizability.MutexInput{Op: linearizability.Acquire, Lock: lockPath, Session: r.session}
		if r.how == howTry && r.err == nil {
			in.Op = linearizability.TryLock
		}
		s.lockReturned = ret
		// A Lock or TryLock may have held the lock for a while, and let
		// it go again, before it returned: its node was first in the
		// queue (and another's TryLock rightly found the lock taken), and
		// then the call gave up, or its session expired and it queued
		// again with the next. So for each session the client had during
		// the call, other than the one that holds at the end, there is an
		// acquisition and a release of unknown outcome within the call.
		s.noteCallSession(r.session)
		for _, id := range s.callSessions {
			// A TryLock that found the lock taken never had its node
			// first in its last session; a Lock that holds at the end
			// held nothing before in it — or, if someone deleted its node
			// meanwhile and it queued again, held it in all but name,
			// which only another client's TryLock could have seen, and
			// such a TryLock claims nothing (lockOverlapped).
			if id == r.session && (r.got || r.how == howTry && r.err == nil) {
				continue
			}
			h.add(inc.row, linearizability.MutexInput{Op: linearizability.Acquire, Lock: lockPath, Session: id}, linearizability.MutexUnknown{}, s.acquireCall, ret)
			h.add(inc.row, linearizability.MutexInput{Op: linearizability.Release, Lock: lockPath, Session: id}, linearizability.MutexUnknown{}, s.acquireCall, ret)
		}
		switch {
		case r.err != nil:
			h.note("%s's %s fails: %v", s.name(), r.how.lockCall(), r.err)
			return true
		case !r.got:
			if h.lockOverlapped(s) {
				// Another client's Lock was under way meanwhile: its node
				// may have been first in the queue, the lock held in all
				// but name, and let go again before that Lock returned
				// holding through another node (a stray twin of a create
				// whose reply was lost, a node someone deleted) — which
				// no recorded operation shows. The answer claims nothing.
				in.Op = linearizability.Acquire
			}
			h.add(inc.row, in, linearizability.MutexOutput{}, s.acquireCall, ret)
			h.note("%s's TryLock finds the lock taken", s.name())
			return true
		}
		h.add(inc.row, in, linearizability.MutexOutput{OK: true, Token: r.token}, s.acquireCall, ret)
		s.phase, s.inCS = phaseHolding, true
		s.holdSession = r.session
		s.heldByNode = h.holdsNode(r.session)
		h.note("%s holds the lock (session %#x%s) and enters its critical section", s.name(), r.session, describeToken(r.token))
		h.checkExclusion(s)

	case pointWrite:
		h.write(s)

	case pointUnlock:
		r.how = inc.unlockFor(h.how)
		if r.how == howReenter && !inc.closed {
			h.note("%s, still in its critical section, calls Lock again on the handle that holds the lock", s.name())
			return true
		}
		if r.how == howReenter {
			r.how = howPlain
		}
		s.inCS = false
		s.phase, s.unlockAttempts = phaseUnlocking, 0
		s.releaseCall = h.rec.Now()
		// The session now counts too: a reentrant Lock after the hold's
		// session expired acquires afresh, in the next.
		s.goneAtUnlock = s.heldByNode && !h.holdsNode(s.holdSession) && !h.holdsNode(inc.conn.SessionID())
		s.deleteInDoubt, s.releaseStep = false, h.cur.index
		h.note("%s leaves its critical section%s and calls %s", s.name(), describeState(inc.locker), r.how.unlockCall())

	case pointReentered:
		if r.err != nil {
			h.note("%s's reentrant Lock fails: %v; it calls Unlock for it all the same", s.name(), r.err)
		} else {
			h.note("%s's reentrant Lock returns; it calls Unlock for it", s.name())
		}

	case pointUnlockAgain:
		h.note("%s, its Unlock under way, calls UnlockContext with a deadline of %v from another goroutine (a deferred Unlock racing an explicit one)", s.name(), shortDeadline)

	case pointReleft:
		if r.err != nil {
			h.note("%s's Unlock of the reentrant Lock fails: %v", s.name(), r.err)
		} else {
			h.note("%s's Unlock of the reentrant Lock returns, and the client is still in its critical section", s.name())
		}

	case pointUnlocked:
		// A client retries an Unlock that failed without saying the hold
		// was gone; the attempts are one release, from the first call to
		// the last return. Only a release that returned nil claims
		// something: that the session held the lock until it let go. An
		// error leaves the outcome open even when it says the hold was
		// lost (ErrLockLost): a Delete whose reply was lost may have
		// released the lock just before the session expired, and the
		// client cannot tell which. A client may also leave a failed
		// release pending and go on to its next Lock, as a caller that
		// ignores Unlock's error does; the outcome is then open too.
		in := linearizability.MutexInput{Op: linearizability.Release, Lock: lockPath, Session: s.holdSession}
		s.unlockAttempts++
		switch {
		case r.err == nil:
			h.add(inc.row, in, linearizability.MutexOutput{OK: true}, s.releaseCall, h.returned(r.at))
			h.note("%s's %s returns", s.name(), r.how.unlockCall())
			// A process that closed its Conn ended its session itself,
			// and knows it.
			if s.goneAtUnlock && !s.deleteInDoubt && !inc.closed {
				h.found(MutualExclusion, "%s's %s returned nil at step %d, but when its release began at step %d the server held no node of its session %#x: the hold was lost before, and Unlock must say so (ErrLockLost), or the caller never learns its critical section overlapped the next holder's",
					s.name(), r.how.unlockCall(), h.cur.index, s.releaseStep, s.holdSession)
			}
		case releaseSettled(r.err):
			h.addUnknown(inc.row, in, s.releaseCall)
			h.note("%s's %s says the hold was gone: %v", s.name(), r.how.unlockCall(), r.err)
		case h.how != howPlain && h.how < numHows || inc.closed:
			// Any way but the plain one sends the client on (howGiveUp
			// names it; the other ways lend it their draws, so that about
			// half the failed Unlocks are left pending).
			h.addUnknown(inc.row, in, s.releaseCall)
			h.note("%s's %s fails: %v; the client leaves the release pending and moves on", s.name(), r.how.unlockCall(), r.err)
			r.how = howGiveUp
		case s.unlockAttempts < unlockAttempts:
			h.note("%s's %s fails, and the client calls Unlock again: %v", s.name(), r.how.unlockCall(), r.err)
			r.how = howPlain
			return true
		default:
			h.addUnknown(inc.row, in, s.releaseCall)
			h.note("%s's Unlock fails, for the last time: %v", s.name(), r.err)
		}
		s.phase, s.unlockAttempts = phaseIdle, 0
	}
	return true
}
