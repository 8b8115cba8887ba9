package fuzz

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
)

// This file follows the clients' sessions: which are live, which a cut
// (a partition, a pause) holds, how each ended, and the nodes each owns.

// expiryStep returns the story's number for the step in which the server
// expired session (or closed it), 0 if it has not.
func (h *harness) expiryStep(session int64) int {
	for _, r := range h.srv.Log() {
		if r.Session == session && r.Kind == zkfake.RecordSession && (r.Op == "expireSession" || r.Op == "closeSession") {
			return h.stepAt(r.Time.Sub(h.start))
		}
	}
	return 0
}

// endedHow says how the server ended session, as its log tells: "expired",
// or "been closed" for a session its client closed. The history records
// both as a SessionExpiry, and expiryStep finds either.
func (h *harness) endedHow(session int64) string {
	for _, r := range h.srv.Log() {
		if r.Session == session && r.Kind == zkfake.RecordSession && r.Op == "closeSession" {
			return "been closed"
		}
		if r.Session == session && r.Kind == zkfake.RecordSession && r.Op == "expireSession" {
			return "expired"
		}
	}
	return "expired"
}

// noteSession remembers which client a session belongs to, for the story.
func (h *harness) noteSession(inc *incarnation) {
	id := inc.conn.SessionID()
	if id == 0 {
		return
	}
	if _, ok := h.sessions[id]; !ok {
		h.sessions[id] = restartedName(inc.slot.id, inc.n-1)
	}
}

// followCuts settles the outcome of the partitions and pauses whose
// outcome is open: the session expired (however: of the cut, or of an
// expiry or a crash meanwhile), or the client is back on it.
func (h *harness) followCuts() {
	if len(h.cuts) == 0 {
		return
	}
	live := h.liveSessions()
	open := h.cuts[:0]
	for _, c := range h.cuts {
		switch {
		case !live[c.session] && c.pause:
			h.tally.PausesExpired++
		case !live[c.session]:
			h.tally.PartitionsExpired++
		case !c.healed || c.inc.conn.SessionID() != c.session || c.inc.conn.State() != zk.StateHasSession:
			open = append(open, c)
		case c.pause:
			h.tally.PausesSurvived++
		case c.noticed:
			h.tally.PartitionsResumed++
		default:
			h.tally.PartitionsUnnoticed++
		}
		if c.long && live[c.session] && c.healed && c.inc.conn.SessionID() == c.session && c.inc.conn.State() == zk.StateHasSession {
			h.tally.LongPartitionsSurvived++
		}
	}
	clear(h.cuts[len(open):])
	h.cuts = open
}

// openCut returns the open partition or pause of inc, nil if none.
func (h *harness) openCut(inc *incarnation) *cut {
	for _, c := range h.cuts {
		if c.inc == inc && !c.healed {
			return c
		}
	}
	return nil
}

// liveSessions returns the sessions the server holds now.
func (h *harness) liveSessions() map[int64]bool {
	live := map[int64]bool{}
	for _, id := range h.srv.Sessions() {
		live[id] = true
	}
	return live
}

// nodesOf returns the ephemeral nodes session owns in the lock's (or the
// recipe's) directory.
func (h *harness) nodesOf(session int64) []string {
	var nodes []string
	for _, p := range h.srv.Ephemerals(session) {
		if strings.HasPrefix(p, h.dir+"/") {
			nodes = append(nodes, p)
		}
	}
	return nodes
}

// holdsNode reports whether session owns a node in the lock's directory.
func (h *harness) holdsNode(session int64) bool { return len(h.nodesOf(session)) > 0 }

// replaceClosed ends s's process if its Conn was closed and it has made
// its one call since: a new process takes its place. It reports whether it
// did.
func (h *harness) replaceClosed(s *slot) bool {
	if !s.inc.closed || s.inc.locksAfterClose == 0 {
		return false
	}
	h.note("%s's process, its Conn closed, ends and restarts as %s, with a session of its own", s.name(), restartName(s))
	h.spawn(s)
	return true
}

// ownSession opens a session of the harness's own, for what no client
// does: preparing the lock's directory, touching a client's nodes, reading
// what the server holds. It is pinned to the leader, which never lags: a
// follower may restart behind the leader and show a past the harness must
// not take for the present.
func (h *harness) ownSession() *zkfake.Conn {
	conn, _, err := h.srv.Connect(10*h.srv.TickTime(), zkfake.WithMember(0))
	if err != nil {
		panic(fmt.Sprintf("zkfuzz: connecting the harness's own session: %v", err))
	}
	h.sessions[conn.SessionID()] = ownSession
	return conn
}

// closeAdmin closes the harness's own session, if it opened one.
func (h *harness) closeAdmin() {
	if h.admin != nil {
		h.admin.Close()
		h.admin = nil
	}
}

// noteLink follows the client's connection by its session events: the
// client knows it lost the connection when it hears Disconnected, and that
// it is back when it hears HasSession.
func (inc *incarnation) noteLink(ev zk.Event) {
	switch {
	case ev.Type != zk.EventSession:
	case ev.State == zk.StateHasSession:
		inc.downSince.Store(0)
	case ev.State == zk.StateDisconnected && inc.downSince.Load() == 0:
		inc.downSince.Store(time.Now().UnixNano())
	}
}

// disconnected is how long the client has been without a connection, by
// what it heard; 0 while it has one.
func (inc *incarnation) disconnected() time.Duration {
	if since := inc.downSince.Load(); since != 0 {
		return time.Since(time.Unix(0, since))
	}
	return 0
}
