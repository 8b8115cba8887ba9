package fuzz

import (
	"fmt"

	"github.com/zksim/zksim/linearizability"
)

// This file keeps the books of who holds the lock and of the writes to
// the protected resource, and runs the mutual-exclusion and
// unfenced-write detectors on them.

// withToken renders " with token N", or nothing for a locker without tokens.
func withToken(token int64) string {
	if token == 0 {
		return ""
	}
	return fmt.Sprintf(" with token %d", token)
}

// entered says in which step of the story inc entered the critical section
// of the hold it has (the harness records the hold as it lets the client
// in), and with which token: those of its last successful acquisition.
func (h *harness) entered(inc *incarnation) (step int, token int64) {
	ops := h.rec.History().Operations
	for i := len(ops) - 1; i >= 0; i-- {
		if _, out, ok := hold(ops[i]); ok && h.rowInc(ops[i].ClientID) == inc {
			if i >= len(h.opSteps) {
				break
			}
			return h.opSteps[i], out.Token
		}
	}
	return 0, 0
}

// definite reports whether op's outcome is known: it took effect between
// its call and its return, as its output says. Any other output (none, or
// one that says the outcome is unknown) leaves it open.
func definite(op linearizability.Operation) bool {
	if op.Return == linearizability.Never {
		return false
	}
	switch op.Output.(type) {
	case linearizability.MutexOutput, struct{}:
		return true
	}
	return false
}

// otherHolder says who else holds the lock as s writes: ", while client N
// had held since step M with token T", or nothing.
func (h *harness) otherHolder(s *slot) string {
	live := h.liveSessions()
	for _, o := range h.slots {
		if o == s || !o.inCS || !live[o.holdSession] {
			continue
		}
		step, token := h.entered(o.inc)
		return fmt.Sprintf(", while %s had been in its critical section since step %d%s", o.name(), step, withToken(token))
	}
	return ""
}

// hold reports whether op is an acquisition that took the lock, with a
// definite outcome.
func hold(op linearizability.Operation) (linearizability.MutexInput, linearizability.MutexOutput, bool) {
	in, ok := op.Input.(linearizability.MutexInput)
	out, done := op.Output.(linearizability.MutexOutput)
	if !ok || !done || !out.OK || !definite(op) || (in.Op != linearizability.Acquire && in.Op != linearizability.TryLock) {
		return in, out, false
	}
	return in, out, true
}

// token reads the locker's fencing token, 0 if it has none.
func (h *harness) token(inc *incarnation) int64 {
	if f, ok := inc.locker.(Fencer); ok {
		return f.Token()
	}
	return 0
}

// fencedLock reports whether the case's locker hands out fencing tokens
// (a Fencer).
func (h *harness) fencedLock() bool {
	for _, inc := range h.incs {
		if inc.locker != nil {
			_, ok := inc.locker.(Fencer)
			return ok
		}
	}
	return false
}

func describeToken(token int64) string {
	if token == 0 {
		return ""
	}
	return fmt.Sprintf(", token %d", token)
}

// checkExclusion is the direct mutual-exclusion check: s has just entered
// its critical section; nobody else may be in theirs. A holder whose
// session has expired may still believe it holds — that is what fencing is
// for — so only holders whose sessions are alive count.
func (h *harness) checkExclusion(s *slot) {
	live := h.liveSessions()
	if !live[s.holdSession] || s.revoked {
		return
	}
	for _, o := range h.slots {
		// A holder whose node someone else deleted holds nothing, though
		// it may not know yet.
		if o == s || !o.inCS || !live[o.holdSession] || o.revoked {
			continue
		}
		step, token := h.entered(s.inc)
		ostep, otoken := h.entered(o.inc)
		h.found(MutualExclusion, "%s entered its critical section at step %d%s while %s had been in its own since step %d%s, both sessions alive (%#x and %#x)",
			s.name(), step, withToken(token), o.name(), ostep, withToken(otoken), s.holdSession, o.holdSession)
		return
	}
}

// write is the holder's write to the protected resource. A Fencer's write
// carries its token and the resource refuses a token older than the newest
// it accepted; an unfenced write is always accepted.
func (h *harness) write(s *slot) {
	inc := s.inc
	_, fenced := inc.locker.(Fencer)
	if lostAlready(inc.locker) {
		h.note("%s's lock says the hold is lost, and it skips its write", s.name())
		return
	}
	token := h.token(inc)
	if fenced && token == 0 {
		h.note("%s has no fencing token any more (its locker knows the hold is lost) and skips its write", s.name())
		return
	}
	accepted := !fenced || token >= h.resourceToken
	if accepted && fenced {
		h.resourceToken = token
	}
	at := h.rec.Now()
	h.add(inc.row, linearizability.MutexInput{Op: linearizability.Write, Lock: lockPath, Session: s.holdSession, Token: token}, linearizability.MutexOutput{OK: accepted}, at, at)
	verdict := "the resource accepts it"
	if !accepted {
		verdict = fmt.Sprintf("the resource refuses it: it has seen token %d", h.resourceToken)
	}
	h.note("%s writes to the protected resource%s: %s", s.name(), describeToken(token), verdict)
	if accepted && !fenced && !h.liveSessions()[s.holdSession] && h.tokenless == "" {
		// What a lock without fencing tokens cannot promise, the first
		// time a case shows it: the campaign reports it once, and the
		// case goes on looking for the lock's bugs.
		h.tokenless = StableName(fmt.Sprintf("%s wrote to the protected resource at step %d after its session %#x had %s at step %d%s, and nothing refused the write: the locker hands out no fencing token",
			s.name(), h.cur.index+1, s.holdSession, h.endedHow(s.holdSession), h.expiryStep(s.holdSession), h.otherHolder(s)))
		h.note("· (a lock without fencing tokens cannot refuse this write; the campaign reports it once, and goes on)")
	}
}
