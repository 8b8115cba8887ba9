package zkfake

import (
	"fmt"
	"sort"
	"strings"
)

// Dump renders the whole tree, one node a line in path order, with each
// node's data length, versions and ephemeral owner: a quick look for a
// failing test.
func (s *Server) Dump() string {
	var b strings.Builder
	for _, n := range s.Znodes() {
		fmt.Fprintf(&b, "%s data=%q version=%d cversion=%d", n.Path, n.Data, n.Stat.Version, n.Stat.Cversion)
		if n.Stat.EphemeralOwner != 0 {
			fmt.Fprintf(&b, " owner=%#x", n.Stat.EphemeralOwner)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Sessions returns the ids of the live sessions, in order.
func (s *Server) Sessions() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int64, 0, len(s.st.sessions))
	for id := range s.st.sessions {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Ephemerals returns the paths of the ephemeral nodes a session owns, in
// the order they were made.
func (s *Server) Ephemerals(sessionID int64) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.st.sessions[sessionID]
	if sess == nil {
		return nil
	}
	paths := make([]string, 0, len(sess.ephemerals))
	for p := range sess.ephemerals {
		paths = append(paths, p)
	}
	sortByCreation(s.st.tree, paths)
	return paths
}

// WatchCount returns how many sessions hold a watch on path on the server:
// data watches (from getData and exists) and child watches together.
func (s *Server) WatchCount(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.members {
		n += m.watches.count(path)
	}
	return n
}

// TotalWatches returns how many watches the server holds, over all paths.
func (s *Server) TotalWatches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.members {
		n += m.watches.total()
	}
	return n
}

// DeliveredEvents returns how many watch events the server has delivered to
// a session. The herd detector compares these counts before and after a
// release.
func (s *Server) DeliveredEvents(sessionID int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.delivered[sessionID]
}

// TotalDeliveredEvents returns how many watch events the server has
// delivered, to all sessions.
func (s *Server) TotalDeliveredEvents() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, d := range s.delivered {
		n += d
	}
	return n
}

// NodeCount returns how many znodes the tree holds, "/" and "/zookeeper"'s
// own included.
func (s *Server) NodeCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.st.tree.nodes)
}

// Zxid returns the last zxid the server handed out.
func (s *Server) Zxid() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.zxid
}

// SetSequence sets the sequence counter of the znode at path: the next
// sequential child created under it gets the suffix n, the one after n+1,
// and so on. It fails with zk.ErrNoNode if there is no such node.
//
// It saves a test the 2^31 creates it would take to reach the counter's
// wrap: ZooKeeper's counter is a signed int32 that goes from 2147483647 to
// -2147483648, and prints as "%010d", so names past the wrap read
// "x-2147483648" and, from -999999999 on, "x-000000005" — they sort before
// every name made before the wrap. The server draws sequence numbers and
// the parent's Cversion from the same counter, so Cversion moves with it.
// It is not a ZooKeeper request: it takes no zxid and fires no watch. Every
// member of an ensemble (WithEnsemble) gets it in order after the
// transactions before it, so a lagging follower sees it when it catches
// up. The event log records it as a fault record, "setSequence".
func (s *Server) SetSequence(path string, n int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.st.setSequence(path, n); err != nil {
		return err
	}
	s.log.add(Record{Kind: RecordFault, Zxid: s.st.zxid, Op: "setSequence", Path: path, Input: fmt.Sprintf("n=%d", n)})
	s.replicate()
	return nil
}
