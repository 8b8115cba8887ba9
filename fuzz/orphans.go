package fuzz

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
// twice the longest session timeout has passed; the recipe's checks run
// before each move and each step.
func (h *harness) outlastOrphans() {
	if h.finding != nil || !h.holdsOrphans() {
		return
	}
	h.tick()
	h.begin("every fault healed: time passes until the server has expired the sessions no client holds, " +
		"and the clients' calls to the server are answered meanwhile; no client starts a new call")
	// Steps of a quarter of the longest timeout keep the phase to a few
	// steps; a call made meanwhile waits for the step's end, as a call
	// does while an action lets time pass.
	h.passTime(2*h.maxTimeout, max(noticeStep, h.maxTimeout/4), true, func() bool {
		h.checkRecipe()
		return h.finding != nil || !h.holdsOrphans()
	})
}

// holdsOrphans reports whether the server holds a session that no client
// holds (the harness's own sessions aside).
func (h *harness) holdsOrphans() bool {
	held := map[int64]bool{}
	for _, s := range h.slots {
		held[s.inc.conn.SessionID()] = true
	}
	for _, id := range h.srv.Sessions() {
		if !held[id] && h.sessions[id] != ownSession {
			return true
		}
	}
	return false
}
