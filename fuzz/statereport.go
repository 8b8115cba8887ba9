package fuzz

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zksim/zksim/recipe"
)

// stateHeard is what a locker's state listener has heard
// (recipe.WithStateListener, which RecipeMutex installs): every change in
// order, one at a time.
type stateHeard struct {
	on     bool // the locker tells this listener
	inside atomic.Int32

	mu      sync.Mutex
	last    recipe.MutexState
	trouble string // the first thing heard that breaks the listener's promise
}

// hear is the listener.
func (l *stateHeard) hear(s recipe.MutexState) {
	concurrent := l.inside.Add(1) > 1
	defer l.inside.Add(-1)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.trouble != "":
	case concurrent:
		l.trouble = fmt.Sprintf("its state listener was told of %v while it was still hearing of another change", s)
	case !stateFollows(l.last, s):
		l.trouble = fmt.Sprintf("its state listener was told of a change from %v to %v", l.last, s)
	}
	l.last = s
}

// heard returns the last state the listener heard, and the first broken
// promise, if any.
func (l *stateHeard) heard() (recipe.MutexState, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last, l.trouble
}

// stateFollows reports whether a hold's state can change from prev to next,
// as recipe.MutexState's documentation tells: a hold begins Held, is
// Suspended and Held again with the connection, and ends Unlocked — after
// Lost if it was lost, or after Releasing if an Unlock failed.
func stateFollows(prev, next recipe.MutexState) bool {
	switch prev {
	case recipe.MutexUnlocked:
		return next == recipe.MutexHeld
	case recipe.MutexHeld, recipe.MutexSuspended:
		return next != prev
	case recipe.MutexLost, recipe.MutexReleasing:
		return next == recipe.MutexUnlocked
	}
	return false
}

// checkStateReport is the StateReport detector, run when s's Lock or
// Unlock has returned (r is its point). A locker that reports its state
// must report one its call allows — Held, Suspended or Lost after a Lock
// that got the lock; Unlocked or Releasing after one that did not, or after
// a failed Unlock; Unlocked after a successful one — with a fencing token
// exactly while it holds, Lost closed exactly when it holds nothing that is
// still to be released, and the last change its listener heard.
//
// inc is the incarnation whose call returned: by now s may have a new
// one, whose goroutine is still making its locker.
func (h *harness) checkStateReport(s *slot, inc *incarnation, r *request) {
	if h.finding != nil {
		return
	}
	var call string
	result, allowed := fmt.Sprintf("failed (%v)", r.err), []recipe.MutexState{recipe.MutexUnlocked, recipe.MutexReleasing}
	switch r.point {
	case pointLocked:
		call = r.how.lockCall()
		switch {
		case r.got:
			result, allowed = "got the lock", []recipe.MutexState{recipe.MutexHeld, recipe.MutexSuspended, recipe.MutexLost}
		case r.err == nil:
			result = "found it taken"
		}
	case pointUnlocked:
		call = r.how.unlockCall()
		if r.err == nil {
			result, allowed = "returned", []recipe.MutexState{recipe.MutexUnlocked}
		}
	default:
		return
	}
	sr, ok := inc.locker.(StateReporter)
	if !ok {
		return
	}
	st := sr.State()
	holds := st == recipe.MutexHeld || st == recipe.MutexSuspended
	lost := isClosed(sr.Lost())
	after := fmt.Sprintf("after %s's %s %s at step %d, its lock reports %v", s.name(), call, result, h.cur.index, st)
	if !slices.Contains(allowed, st) {
		h.found(StateReport, "%s", after)
		return
	}
	if f, ok := inc.locker.(Fencer); ok && holds != (f.Token() != 0) {
		h.found(StateReport, "%s with fencing token %d", after, f.Token())
		return
	}
	if lost != (st == recipe.MutexUnlocked || st == recipe.MutexLost) {
		h.found(StateReport, "%s, and Lost is %s", after, map[bool]string{true: "closed", false: "open"}[lost])
		return
	}
	if !inc.heard.on {
		return
	}
	last, trouble := inc.heard.heard()
	switch {
	case trouble != "":
		h.found(StateReport, "%s; %s", after, trouble)
	case last != st:
		h.found(StateReport, "%s, but the last change its state listener heard of was to %v", after, last)
	}
}

// isClosed reports whether ch is closed (it is never sent on).
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// checkInDoubt holds a lock's word while its hold is in doubt: a holder
// whose connection has been down for longer than its session timeout
// cannot know that its session lives — the server may have expired it and
// let the next contender in — so it must not say Held (Suspended, or Lost,
// are its honest answers). A lock that says Held until it hears "expired"
// keeps its holder at work beside the next one.
func (h *harness) checkInDoubt() {
	if h.finding != nil || !h.sub.isLock() {
		return
	}
	for _, s := range h.slots {
		inc := s.inc
		r, ok := inc.locker.(StateReporter)
		if !ok || s.phase != phaseHolding || inc.isDead() {
			continue
		}
		if down := inc.disconnected(); down > s.timeout && r.State() == recipe.MutexHeld {
			h.found(StateReport, "%s, at step %d: its lock says Held though its connection has been down for %v, longer than its session timeout (%v): the server may have expired its session, and another may hold",
				s.name(), h.cur.index, down.Round(time.Millisecond), s.timeout)
			return
		}
	}
}
