package zkfake

import (
	"maps"
	"slices"
)

// Reset makes the server as a new one for the next test, while its Conns
// live on: every session expires (each owner learns of it at its next
// contact, as with Expire, and carries on with a new session), every
// ensemble member is up, caught up and not lagging, the reply-loss rules
// and random losses are dropped, and the tree is a fresh server's, ACLs
// notwithstanding. Zxids go on from where they were, so that no client has
// seen more than the server has. The event log keeps what it holds and
// records the reset as a fault record, "reset".
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := slices.Sorted(maps.Keys(s.st.sessions))
	var back []*Conn
	for _, id := range ids {
		if c := s.expireLocked(id); c != nil {
			back = append(back, c)
		}
	}
	s.log.add(Record{Kind: RecordFault, Op: "reset"})
	s.losses = lossRules{}
	s.lossy.Store(false)
	s.st.tree, s.st.watches, s.st.changes = newTree(), newWatchTable(), nil
	s.initMembers(len(s.members))
	for _, m := range s.members {
		m.applied = s.st.zxid
	}
	// Sessions that were cut off expire on the clock no more.
	for id, t := range s.expiry {
		t.Stop()
		delete(s.expiry, id)
	}
	// The clients that were connected come back at once and are told
	// their session expired, on the fresh tree.
	for _, c := range back {
		c.reconnect()
	}
}
