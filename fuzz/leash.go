package fuzz

import (
	"fmt"
	"runtime"
	"sync"
	"time"
)

// A locker's goroutines are the harness's to schedule only while they wait
// at the gate. Once a process has ended (crashed, or the case is over) its
// calls pass the gate at once and go to its Conn, which refuses them; and
// calls that never reach the gate (SessionID, State) never block. A locker
// that loops on such calls without blocking keeps synctest.Wait from ever
// returning, and one that loops on a timer keeps the bubble from ever
// ending: either way the harness would hang until the test's timeout.
//
// So every call a client's goroutines make on their Conn outside the gate
// goes through the incarnation's leash. A goroutine that makes spinLimit
// such calls at one instant of virtual time spins; one that still calls
// after the case is over and a linger has passed has outlived its Conn's
// Close. Either way the leash records what it saw and ends the goroutine
// (runtime.Goexit runs its deferred calls, so the client loop's own
// bookkeeping still happens), and the harness reports it: liveness if the
// client loop was still in Lock or Unlock, a leak if only a goroutine of
// the locker's own was left.
//
// What the leash cannot see, it cannot stop: a goroutine that spins or
// loops on timers without ever calling its Conn, or one blocked for ever
// holding a sync.Mutex another goroutine needs (synctest does not count
// such a wait as durably blocked). Those still hang the case.

// spinLimit is how many calls outside the gate an incarnation's goroutines
// may make at one instant of virtual time before they are said to spin. A
// locker that waits makes a handful.
const spinLimit = 5000

// caseEnd is where a case is in its ending, shared by the harness and
// every incarnation's leash.
type caseEnd struct {
	mu       sync.Mutex
	over     bool      // the harness has stopped scheduling: the case is over
	at       time.Time // when it was over
	lingered bool      // the linger after the case is over has passed
}

func (e *caseEnd) state() (over, lingered bool, at time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.over, e.lingered, e.at
}

// leash follows the calls an incarnation's goroutines make outside the
// gate, and ends those that spin or outlive the case.
type leash struct {
	end *caseEnd

	mu      sync.Mutex
	instant time.Time // the instant of the calls counted in n
	n       int       // calls outside the gate at that instant
	lastErr error     // what the last call through a dead gate returned
	// call is the Lock or Unlock the client loop was in when the process
	// ended ("" between them), as the harness saw it.
	call string
	// caught is what the leash ended a goroutine for, nil if nothing.
	caught *runaway
	told   bool // the harness has reported caught
}

// runaway is a goroutine the leash ended.
type runaway struct {
	spun  bool          // it made spinLimit calls at one instant; else it outlived the case
	calls int           // for a spin, how many calls
	what  string        // the call it was making, described
	err   error         // what the call before it returned, if it went through a dead gate
	dead  bool          // its process had ended
	after time.Duration // how long after the case was over it called
	call  string        // the client loop's Lock or Unlock, if it was in one
}

func newLeash(end *caseEnd) *leash { return &leash{end: end} }

// gated notes a call the harness let through: the goroutine blocked.
func (l *leash) gated() {
	l.mu.Lock()
	l.n = 0
	l.mu.Unlock()
}

// outside notes a call that does not wait for the harness: one through the
// gate of a dead process (dead), or one that is never gated. It ends the
// calling goroutine if it spins or outlives the case.
func (l *leash) outside(what string, dead bool) {
	over, lingered, at := l.end.state()
	now := time.Now()
	l.mu.Lock()
	if !now.Equal(l.instant) {
		l.instant, l.n = now, 0
	}
	l.n++
	var r *runaway
	switch {
	case l.n >= spinLimit:
		r = &runaway{spun: true, calls: l.n}
	case lingered && (dead || over):
		r = &runaway{after: now.Sub(at)}
	}
	if r == nil {
		l.mu.Unlock()
		return
	}
	r.what, r.dead, r.call = what, dead, l.call
	if dead {
		r.err = l.lastErr
	}
	if l.caught == nil {
		l.caught = r
	}
	l.n = 0
	l.mu.Unlock()
	runtime.Goexit()
}

// result notes what a call through a dead gate returned.
func (l *leash) result(err error) {
	l.mu.Lock()
	l.lastErr = err
	l.mu.Unlock()
}

// ended records the call the client loop was in as its process ended.
func (l *leash) ended(call string) {
	l.mu.Lock()
	l.call = call
	l.mu.Unlock()
}

// take returns what the leash caught, once.
func (l *leash) take() *runaway {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.caught == nil || l.told {
		return nil
	}
	l.told = true
	return l.caught
}

// inCall names the call of the client loop the client is in, "" if none.
func (s *slot) inCall() string {
	if s.call != "" {
		return s.call
	}
	switch s.phase {
	case phaseLocking:
		return "Lock"
	case phaseUnlocking:
		return "Unlock"
	}
	return ""
}

// reportRunaways reports the goroutines the leashes ended: the first
// becomes the case's finding, if it has none yet. A spin is a liveness
// failure; so is a Lock or Unlock that was still running long after the
// case was over (its ctx cancelled, its Conn closed); a goroutine of the
// locker's own still running then is a leak.
func (h *harness) reportRunaways() {
	for _, inc := range h.incs {
		r := inc.gated.leash.take()
		if r == nil {
			continue
		}
		name := incName(inc)
		call := r.call
		if !r.dead && inc == inc.slot.inc {
			call = inc.slot.inCall()
		}
		who := fmt.Sprintf("a goroutine of %s's %s", name, h.sub.handleName())
		if call != "" {
			who = fmt.Sprintf("%s's %s did not return:", name, call)
		}
		last := "the last " + r.what
		if r.err != nil {
			last += fmt.Sprintf(" (the one before failed: %v)", r.err)
		}
		where := ""
		if r.dead {
			where = " on the Conn of a process that had ended"
		}
		switch {
		case r.spun && call != "":
			h.found(Liveness, "%s it spun, making %d calls at one instant without blocking%s, %s", who, r.calls, where, last)
		case r.spun:
			h.found(Liveness, "%s spun, making %d calls at one instant without blocking%s, %s", who, r.calls, where, last)
		case call != "":
			h.found(Liveness, "%s it kept running after its Conn was closed and its ctx cancelled: %v after the case ended it still called %s", who, r.after.Round(time.Second), r.what)
		default:
			h.found(Leak, "%s kept running after its Conn was closed: %v after the case ended it still called %s", who, r.after.Round(time.Second), r.what)
		}
	}
}
