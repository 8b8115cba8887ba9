package fuzz

import (
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/zktest"
)

// This file runs a Recipe's own checks: Check and Stalled after every step
// (state-report and liveness findings), Settled once every client has
// stopped (convergence), with the View they see and the session of the
// harness's own they read the server with.

// view is what a Recipe's Check and Settled see of s's client.
func (h *harness) view(s *slot) View {
	inc := s.inc
	v := View{
		Client:  s.id,
		Session: inc.conn.SessionID(),
		Expired: func(session int64) bool { return !slices.Contains(h.srv.Sessions(), session) },
		Call:    s.call,
		// The session timeout the client asked for is the one it has:
		// the harness asks within what the server grants.
		SessionTimeout: s.timeout,
		Disconnected:   inc.disconnected(),
	}
	v.Gated = inc.callWaits()
	v.Reachable = !inc.partitioned && !inc.paused && inc.conn.State() == zk.StateHasSession && !h.lagging[inc.conn.Member()]
	v.Paused = inc.paused
	if s.call != "" {
		v.Since = h.now() - s.acquireCall.Time().Sub(h.start)
		v.Waiting = v.Reachable && inc.nextRequest() == nil && !inc.holdsLate()
		// Waiting so since the harness last let a request of its go, or
		// since it was first seen waiting so: time paused, cut off or
		// behind a lagging member is no waiting on its own.
		if !v.Waiting {
			s.waitingSince = time.Time{}
		} else if s.waitingSince.IsZero() {
			s.waitingSince = time.Now()
		}
		v.Idle = time.Since(later(s.lastMove, s.waitingSince))
	}
	// Asked for when needed only: the view is made for every client
	// after every step.
	v.Nodes = func() []string { return h.nodesOf(v.Session) }
	return v
}

// checkRecipe asks a Recipe's Check of every live client's handle, and its
// Stalled of every one whose call waits, after a step.
func (h *harness) checkRecipe() {
	sub := h.sub
	if sub.check == nil && sub.stalled == nil || h.finding != nil {
		return
	}
	for _, s := range h.slots {
		inc := s.inc
		if inc.handle == nil || inc.isDead() || inc.exited {
			continue
		}
		v := h.view(s)
		if sub.checkReads {
			v.Read = h.readSession()
		}
		if sub.check != nil {
			if trouble := sub.check(inc.handle, v); trouble != "" {
				if h.found(StateReport, "%s, at step %d: %s", s.name(), h.cur.index, trouble); h.finding != nil {
					return
				}
			}
		}
		if sub.stalled != nil && v.Waiting {
			if trouble := sub.stalled(inc.handle, v); trouble != "" {
				if h.found(Liveness, "%s, at step %d: %s", s.name(), h.cur.index, trouble); h.finding != nil {
					return
				}
			}
		}
	}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// readSession returns the harness's own session for reading the server,
// opened the first time it is asked for.
func (h *harness) readSession() zktest.Conn {
	if h.reader == nil {
		h.reader = h.ownSession()
	}
	return h.reader
}

// closeReader closes the reading session, if one was opened.
func (h *harness) closeReader() {
	if h.reader != nil {
		h.reader.Close()
		h.reader = nil
	}
}

// checkSettled is the Convergence detector: once every client has stopped
// and everything has settled, each live handle's account must match the
// server's (Recipe.Settled), read through a session of the harness's own.
func (h *harness) checkSettled() {
	sub := h.sub
	if sub.settled == nil || h.finding != nil {
		return
	}
	for _, s := range h.slots {
		inc := s.inc
		if inc.handle == nil || inc.isDead() || inc.closed {
			// A handle whose Conn was closed hears nothing more.
			continue
		}
		v := h.view(s)
		v.Read = h.readSession()
		if trouble := sub.settled(inc.handle, v); trouble != "" {
			h.found(Convergence, "once every client had stopped and everything had settled, %s: %s", s.name(), trouble)
			return
		}
	}
}
