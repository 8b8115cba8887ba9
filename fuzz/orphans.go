package fuzz

import "fmt"

// A session whose client has given it up without closing it — a process
// that crashed, a Curator that injected its own expiration while the
// ensemble had no quorum — lives on at the server until its timeout runs
// out, and so do its ephemeral nodes. A recipe that took such a node for
// its own (CURATOR-498's protected create, CURATOR-696's latch) is wrong
// only from the moment the server expires the session: then the node goes,
// and a latch that watches nothing still says it leads while the next
// candidate leads too. A schedule that ends before that moment never shows
// it, so the wind-down waits for it, as time would in any real deployment:
// with every fault healed and before the clients stop, time passes until
// the server has expired every session no client holds, the clients'
// calls to the server answered meanwhile, and the recipe's checks run at
// each step.

// outlastOrphans lets time pass, and the clients' calls to the server go
// through, until the server holds no session that no client holds, or
// twice the longest session timeout has passed.
func (h *harness) outlastOrphans() {
	if h.finding != nil || !h.holdsOrphans() {
		return
	}
	h.tick()
	h.begin("every fault healed: time passes until the server has expired the sessions no client holds, and the clients' calls to the server are answered meanwhile; no client starts a new call")
	step := max(noticeStep, h.maxTimeout/4)
	calls := 0 // answered since time last passed
	for until := h.now() + 2*h.maxTimeout; h.finding == nil && h.holdsOrphans() && h.now() < until; {
		h.tick()
		if s, r := h.waitingCall(); s != nil && calls < orphanCallsPerStep {
			h.begin(fmt.Sprintf("%s moves", s.name()))
			h.grant(s, r)
			calls++
		} else if !h.releaseIdleLate() {
			h.begin(fmt.Sprintf("time passes %v", step))
			h.advance(step)
			calls = 0
		}
		h.checkRecipe()
	}
}

// orphanCallsPerStep bounds the calls outlastOrphans answers before it lets
// time pass again: a client that calls the server again and again without
// waiting (a retry loop with no backoff) must not hold time still. The
// wind-down's liveness rules judge it afterwards.
const orphanCallsPerStep = 50

// holdsOrphans reports whether the server holds a session that no client
// holds (the harness's own sessions aside).
func (h *harness) holdsOrphans() bool {
	held := map[int64]bool{}
	for _, s := range h.slots {
		held[s.inc.conn.SessionID()] = true
	}
	for id := range h.liveSessions() {
		if !held[id] && h.sessions[id] != ownSession {
			return true
		}
	}
	return false
}

// waitingCall returns the first client, in slot order, whose next request
// at the gate is a call to the server, and that call: a point of the
// client's loop (a new Lock, a new call) waits until the wind-down.
func (h *harness) waitingCall() (*slot, *request) {
	for _, s := range h.slots {
		if s.inc.paused {
			continue
		}
		if r := s.inc.chooseRequest(0); r != nil && r.point == noPoint {
			return s, r
		}
	}
	return nil, nil
}
