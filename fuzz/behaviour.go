package fuzz

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zksim/zksim/recipe"
)

// This file is how a lock client calls its locker: the ways a move lets it
// take its step (how), with and without deadlines, and what the harness
// does around the calls.
// how is the way a client takes the step of its loop that a move lets it
// take, drawn with the move. Zero, where shrinking goes, is the plain way.
type how uint8

const (
	howPlain         how = iota
	howShortDeadline     // Lock or Unlock with a deadline of shortDeadline
	howLongDeadline      // Lock or Unlock with a deadline of longDeadline
	howTry               // TryLock instead of Lock
	howReenter           // holding: a reentrant Lock and Unlock pair first
	howGiveUp            // after a failed Unlock, no retry: Lock again
	howPastDeadline      // Lock or Unlock on a context whose deadline has passed already
	howTwice             // Unlock from two goroutines at once, the second with a short deadline
	numHows
)

// howDraws is how many values a move's how is drawn from: the values past
// numHows are plain too, so that half the moves are.
const howDraws = 2 * numHows

const (
	shortDeadline = 100 * time.Millisecond
	longDeadline  = 3 * time.Second
	// closedCallLimit is how many requests a process may make on a Conn it
	// has closed (in its Unlock and its one Lock after the Close, and from
	// any goroutine of its locker): nothing sent on it can succeed, so its
	// calls must fail at once rather than retry as if the connection could
	// come back.
	closedCallLimit = 20
)

func (w how) deadline() time.Duration {
	switch w {
	case howShortDeadline:
		return shortDeadline
	case howLongDeadline:
		return longDeadline
	}
	return 0
}

// callContext returns the context a Lock or Unlock taken the way w runs
// on, derived from parent: a deadline of w's, one that has passed already
// (a request's deadline that ran out before the call), or none.
func (w how) callContext(parent context.Context) (context.Context, context.CancelFunc) {
	switch {
	case w == howPastDeadline:
		return context.WithDeadline(parent, time.Now())
	case w.deadline() > 0:
		return context.WithTimeout(parent, w.deadline())
	}
	return context.WithCancel(parent)
}

// lockFor resolves the how of a Lock move for inc's locker: what it does
// not offer becomes a plain Lock.
func (inc *incarnation) lockFor(w how) how {
	switch w {
	case howShortDeadline, howLongDeadline, howPastDeadline:
		return w
	case howTry:
		if _, ok := inc.locker.(TryLocker); ok {
			return w
		}
	}
	return howPlain
}

// unlockFor resolves the how of an Unlock move likewise.
func (inc *incarnation) unlockFor(w how) how {
	switch w {
	case howShortDeadline, howLongDeadline, howPastDeadline:
		if _, ok := inc.locker.(ContextUnlocker); ok {
			return w
		}
	case howReenter:
		if r, ok := inc.locker.(Reentrant); ok && r.Reentrant() {
			return w
		}
	case howTwice:
		_, ok := inc.locker.(ContextUnlocker)
		if sh, shared := inc.locker.(SharedHandle); ok && shared && sh.SharedHandle() {
			return w
		}
	}
	return howPlain
}

// lock takes the lock the way w says, on a context the harness can cancel
// (see cancelWaitingLock). got is false when a TryLock found the lock taken.
func (inc *incarnation) lock(w how) (got bool, err error) {
	ctx, cancel := w.callContext(inc.ctx)
	defer cancel()
	inc.mu.Lock()
	inc.cancelLock = cancel
	inc.mu.Unlock()
	defer func() {
		inc.mu.Lock()
		inc.cancelLock = nil
		inc.mu.Unlock()
	}()
	if w == howTry {
		return inc.locker.(TryLocker).TryLock(ctx)
	}
	err = inc.locker.Lock(ctx)
	return err == nil, err
}

// unlock releases the lock the way w says.
func (inc *incarnation) unlock(w how) error {
	if w == howTwice {
		return inc.unlockTwice()
	}
	if w.deadline() == 0 && w != howPastDeadline {
		return inc.locker.Unlock()
	}
	ctx, cancel := w.callContext(context.Background())
	defer cancel()
	return inc.locker.(ContextUnlocker).UnlockContext(ctx)
}

// unlockTwice calls Unlock on another goroutine and, once that call is
// under way (the harness says when, at a point of its own, so that which
// call goes first never depends on the Go scheduler), calls UnlockContext
// with a short deadline on this one. The two are one release: it happened
// if either returned nil, and a call that found nothing to release
// (ErrNotLocked, the other got there first) says nothing of it.
func (inc *incarnation) unlockTwice() error {
	first := make(chan error, 1)
	go func() { first <- inc.locker.Unlock() }()
	if !inc.wait(&request{point: pointUnlockAgain}) {
		return <-first
	}
	ctx, cancel := context.WithTimeout(context.Background(), shortDeadline)
	defer cancel()
	second := inc.locker.(ContextUnlocker).UnlockContext(ctx)
	err := <-first
	switch {
	case err == nil || errors.Is(second, recipe.ErrNotLocked):
		return err
	case second == nil || errors.Is(err, recipe.ErrNotLocked):
		return second
	}
	return err
}

// cancelWaitingLock cancels the client's Lock in progress, if there is
// one, and reports whether there was.
func (inc *incarnation) cancelWaitingLock() bool {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	if inc.cancelLock == nil {
		return false
	}
	inc.cancelLock()
	return true
}

// String says what the how asks for, for rapid's account of the draws.
func (w how) String() string {
	switch w {
	case howShortDeadline:
		return "with a short deadline"
	case howLongDeadline:
		return "with a long deadline"
	case howTry:
		return "trying (TryLock)"
	case howReenter:
		return "re-entering"
	case howGiveUp:
		return "giving up on a failed Unlock"
	case howPastDeadline:
		return "with a deadline already past"
	case howTwice:
		return "from two goroutines at once"
	}
	return "plainly"
}

func (w how) lockCall() string {
	switch w {
	case howTry:
		return "TryLock"
	case howShortDeadline, howLongDeadline:
		return fmt.Sprintf("Lock with a deadline of %v", w.deadline())
	case howPastDeadline:
		return "Lock with a deadline already past"
	}
	return "Lock"
}

func (w how) unlockCall() string {
	if d := w.deadline(); d > 0 {
		return fmt.Sprintf("UnlockContext with a deadline of %v", d)
	}
	switch w {
	case howPastDeadline:
		return "UnlockContext with a deadline already past"
	case howTwice:
		return "Unlock, twice at once"
	}
	return "Unlock"
}

// lockOverlapped reports whether another client's Lock was under way at
// some time during s's Lock call: it is now, or it returned after s's
// began.
func (h *harness) lockOverlapped(s *slot) bool {
	for _, o := range h.slots {
		// A return, placed after everything the harness did at its
		// instant, comes after a call made at the same instant.
		if o != s && (o.phase == phaseLocking || !o.lockReturned.Time().Before(s.acquireCall.Time())) {
			return true
		}
	}
	return false
}

// lostAlready reports whether a locker that says when its hold is lost
// (a StateReporter's Lost) says so now: a careful holder checks before it
// acts on the lock.
func lostAlready(l Locker) bool {
	sr, ok := l.(StateReporter)
	return ok && isClosed(sr.Lost())
}

// describeState says what a locker that reports its state (a
// StateReporter) reports.
func describeState(l Locker) string {
	if st, ok := l.(StateReporter); ok {
		return fmt.Sprintf(" (its lock reports %s)", st.State())
	}
	return ""
}

// describePath names the lock a locker that says so (recipe.Mutex's Path)
// says it takes, when that is not the lock's directory.
func describePath(l Locker) string {
	if p, ok := l.(interface{ Path() string }); ok && p.Path() != lockPath {
		return " on " + p.Path()
	}
	return ""
}
