package fuzz

import (
	"fmt"
	"slices"
	"strings"

	"github.com/zksim/zksim/linearizability"
)

// This file is the client loop of a Recipe and the harness's books at its
// points; the faults, the gate, the detectors that do not depend on what
// the recipe is (herd, polling, liveness, leak, panics) and the story are
// the same as a lock's.

// opStyles is how many ways a move may call an op: the move's draw picks
// the op and, beyond the enabled ops' count, the way (see pickOp).
const opStyles = 4

// runOps is a Recipe client's loop: at each point the harness picks one
// of the enabled ops and the client calls it; told to stop, the client
// calls Stop once and ends.
func (inc *incarnation) runOps(sub *subject) {
	defer close(inc.done)
	defer inc.notePanic()
	inc.markLoop()
	inc.handle = sub.newHandle(inc.ctx, Client{Conn: inc.user, Events: inc.events, N: inc.slot.id, ZK: inc.zk}, sub.path)
	for {
		at := &request{point: pointOp}
		for i, op := range sub.ops {
			if op.enabled == nil || op.enabled(inc.handle) {
				at.enabled = append(at.enabled, i)
			}
		}
		if !inc.wait(at) {
			return
		}
		if !at.stop && len(at.enabled) == 0 {
			// No op is enabled: the move passes, and the client waits
			// for its next.
			continue
		}
		call := &Call{mu: &inc.mu, session: inc.conn.SessionID, fence: inc.fenceWrite}
		ctx, cancel := at.how.callContext(inc.ctx)
		inc.mu.Lock()
		inc.cancelLock, inc.call = cancel, call
		inc.mu.Unlock()
		var err error
		switch {
		case at.stop:
			err = sub.stop(inc.handle, inc.ctx, call)
		default:
			err = sub.ops[at.op].call(inc.handle, ctx, call)
		}
		inc.mu.Lock()
		inc.cancelLock, inc.call = nil, nil
		inc.mu.Unlock()
		cancel()
		if !inc.wait(&request{point: pointOpReturned, err: err, call: call, session: inc.conn.SessionID(), stop: at.stop, op: at.op}) {
			return
		}
	}
}

// callInProgress returns the client's call that has not returned to the
// harness: one still running, or one that returned and waits to say so.
func (inc *incarnation) callInProgress() *Call {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	if inc.call != nil {
		return inc.call
	}
	for _, r := range inc.pending {
		if r.point == pointOpReturned {
			return r.call
		}
	}
	return nil
}

// callWaits reports whether a request of the client's to the server, from
// any of its goroutines, waits at the gate.
func (inc *incarnation) callWaits() bool {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	return slices.ContainsFunc(inc.pending, func(r *request) bool { return r.point == noPoint })
}

// fenceWrite is Call.Fence: the write happens at a point of the client's,
// where the harness keeps the resource.
func (inc *incarnation) fenceWrite(token int64) bool {
	r := &request{point: pointFence, token: token}
	return inc.wait(r) && r.got
}

// describeLoop says what a Recipe's clients do, for the story's opening.
func (s *subject) describeLoop() string {
	names := make([]string, len(s.ops))
	for i, op := range s.ops {
		names[i] = op.name
	}
	loop := fmt.Sprintf("one of %s's calls at each move (%s)", s.name, strings.Join(names, ", "))
	if s.stop != nil {
		loop += ", and Stop when told to"
	}
	return loop
}

// pickOp resolves a move's draw at a Recipe client's point: which of the
// enabled ops, and how (half the calls plain, the others with a short or
// a long deadline). Zero, where shrinking goes, is the first op, plainly.
func pickOp(w how, enabled []int) (op int, style how) {
	k := int(w) % len(enabled)
	style = [opStyles]how{howPlain, howPlain, howShortDeadline, howLongDeadline}[int(w)/len(enabled)%opStyles]
	return enabled[k], style
}

// onOpPoint keeps the books at a point of a Recipe client's loop and says
// whether the client goes on.
func (h *harness) onOpPoint(s *slot, r *request) bool {
	inc := s.inc
	sub := h.sub
	switch r.point {
	case pointOp:
		if h.stopping {
			if sub.stop != nil && !inc.stopped {
				inc.stopped = true
				r.stop = true
				h.beginCall(s, "Stop")
				h.note("%s is done, and calls Stop", s.name())
				return true
			}
			inc.exited = true
			h.note("%s is done and stops", s.name())
			return false
		}
		if h.replaceClosed(s) {
			return false
		}
		if len(r.enabled) == 0 {
			h.note("%s has no call to make", s.name())
			return true
		}
		w := h.how
		if inc.closed {
			// One call after the Close, plainly: it must fail at once.
			inc.locksAfterClose++
			w = howPlain
		}
		r.op, r.how = pickOp(w, r.enabled)
		name := sub.ops[r.op].name
		h.beginCall(s, name)
		s.joint = sub.ops[r.op].joint
		if sub.ops[r.op].releases {
			id := inc.conn.SessionID()
			h.releases[id] = append(h.releases[id], [2]int{h.cur.index, -1})
		}
		if d := r.how.deadline(); d > 0 {
			name += fmt.Sprintf(" with a deadline of %v", d)
		}
		h.note("%s calls %s", s.name(), name)

	case pointFence:
		accepted := r.token >= h.resourceToken
		if accepted {
			h.resourceToken = r.token
		}
		r.got = accepted
		verdict := "the resource accepts it"
		if !accepted {
			verdict = fmt.Sprintf("the resource refuses it: it has seen token %d", h.resourceToken)
		}
		h.note("%s writes to the fenced resource with token %d: %s", s.name(), r.token, verdict)

	case pointOpReturned:
		for _, id := range s.callSessions {
			if spans := h.releases[id]; len(spans) > 0 && spans[len(spans)-1][1] < 0 {
				spans[len(spans)-1][1] = h.cur.index
			}
		}
		s.noteCallSession(r.session)
		h.returns[r.session] = append(h.returns[r.session], h.cur.index)
		h.addRecords(s, r.call, r.session, h.returned(r.at))
		if r.err != nil {
			h.note("%s's %s fails: %v", s.name(), s.call, r.err)
		} else {
			h.note("%s's %s returns", s.name(), s.call)
		}
		s.phase, s.call = phaseIdle, ""
	}
	return true
}

// addRecords adds what a call recorded, first asking its Sessions
// functions, to the history: spanning the call, up to ret; for a call that
// never returned (its process crashed), with open outcomes, and no
// session its last.
func (h *harness) addRecords(s *slot, call *Call, last int64, ret linearizability.Instant) {
	inc := s.inc
	crashed := last == 0
	inc.mu.Lock()
	fns := call.sessions
	ifCrashed := call.crashed
	inc.mu.Unlock()
	if crashed {
		for _, fn := range ifCrashed {
			fn()
		}
	}
	for _, fn := range fns {
		for _, id := range s.callSessions {
			fn(id, !crashed && id == last)
		}
	}
	inc.mu.Lock()
	records := call.records
	inc.mu.Unlock()

	for _, rec := range records {
		if rec.unknown || crashed {
			h.addUnknown(inc.row, rec.input, s.acquireCall)
		} else {
			h.add(inc.row, rec.input, rec.output, s.acquireCall, ret)
		}
	}
}

// noteWaiting notes that s, in a call, sets a watch on path in the current
// step: it waits, unless path is a node of its own (a hold's watch on its
// node, which a lock sets as it takes the lock), whether or not its
// session still holds it.
func (h *harness) noteWaiting(s *slot, path string) {
	id := s.inc.conn.SessionID()
	if s.made[path] || slices.Contains(h.srv.Ephemerals(id), path) {
		return
	}
	h.waits[id] = append(h.waits[id], h.cur.index)
}

// wokenInVain reports whether the client of session, woken in story step
// index woken, went back to waiting (set a watch again) before its call
// returned: the change that woke it did not unblock it.
func (h *harness) wokenInVain(session int64, woken int) bool {
	next := func(steps []int) (int, bool) {
		for _, st := range steps {
			if st >= woken {
				return st, true
			}
		}
		return 0, false
	}
	wait, waited := next(h.waits[session])
	ret, returned := next(h.returns[session])
	return waited && (!returned || wait < ret)
}

// beginCall notes that s calls an op named name: the poll detector watches
// it, the liveness detector waits for it to return.
func (h *harness) beginCall(s *slot, name string) {
	s.phase, s.call, s.joint, s.jointCancelled = phaseLocking, name, false, false
	s.callSessions = s.callSessions[:0]
	s.noteCallSession(s.inc.conn.SessionID())
	s.acquireCall = h.rec.Now()
	s.polls, s.lastOK = 0, false
}
