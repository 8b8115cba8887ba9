package fuzz

import (
	"errors"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
)

// This file is the polling detector: a client that wakes on a timer to
// ask the server what it asked before, with nothing changed, is polling (a
// herd in time rather than in watches). It counts the waiter's calls, not
// the recipe's background work beside it (background.go).

// onCompletion takes in a call that returned: the story tells it and, if
// it is the waiter's (background.go), the poll detector counts it.
func (h *harness) onCompletion(s *slot, c completion) {
	if strings.HasPrefix(c.req.method, "create") && c.err == nil && c.result != "" {
		if s.made == nil {
			s.made = map[string]bool{}
		}
		s.made[c.result] = true
	}
	switch {
	case c.req.step != h.cur.index:
		// A call granted in an earlier step (it waited out a partition):
		// say whose it was.
		h.note("  %s's %s returns %s", s.name(), describeCall(c.req), describeResult(c.result, c.err))
	case c.err != nil || c.result != "":
		h.note("  → %s", describeResult(c.result, c.err))
	}
	if c.wrote {
		h.writes++
	}
	if c.req.method == "delete" && recipe.IsConnectionLoss(c.err) {
		s.deleteInDoubt = true
	}
	if c.req.background {
		return // the waiter's last call is still its last
	}
	s.lastOK = s.phase == phaseLocking && !(c.err != nil && (recipe.IsConnectionLoss(c.err) || errors.Is(c.err, zk.ErrSessionExpired) || errors.Is(c.err, zk.ErrClosing)))
	s.lastDone, s.lastSig, s.lastSession = c.at, h.signature(), s.inc.conn.SessionID()
}

// signature changes whenever the tree does: a client's write succeeded or a
// session's end deleted nodes.
func (h *harness) signature() [2]int {
	return [2]int{h.writes, h.srv.NodeCount()}
}

// checkPoll is the poll detector, run as the harness grants a waiting
// client's call: the client polls if it made this call after sleeping on a
// timer (its previous call returned at an earlier instant than this one was
// made), with its previous call answered and nothing changed on the server
// since. A waiter that waits for a watch makes its calls back to back after
// each change; a retry after a lost connection follows a failed call.
func (h *harness) checkPoll(s *slot, r *request) {
	if r.background {
		// The recipe's background work, beside the waiter
		// (background.go): neither a poll nor a break in one.
		return
	}
	prevMade := s.lastMade
	s.lastMade = r.at
	if s.phase != phaseLocking {
		s.polls = 0
		return
	}
	// A call the locker makes because a watch event woke it is no poll,
	// whatever the event was for (a write from outside the clients does
	// not show in the signature).
	woken := h.woke[s].After(s.lastDone)
	// A real client's call whose failure the gate did not see (see
	// incarnation.failedLocally) is a failure all the same: a call
	// failed since the client made its last one.
	failed := false
	if at := s.inc.failedLocally.Load(); at != 0 {
		failed = !time.Unix(0, at).Before(prevMade)
	}
	if s.lastOK && !woken && !failed && r.at.After(s.lastDone) && h.signature() == s.lastSig && s.inc.conn.SessionID() == s.lastSession {
		s.polls++
	} else {
		s.polls = 0
	}
	if s.polls >= pollLimit {
		h.found(Polling, "%s polls while it waits: %d calls in a row, each made after sleeping, with nothing changed on the server in between", s.name(), s.polls)
	}
}
