package zkfake

import (
	"slices"
	"sort"

	"github.com/go-zookeeper/zk"
)

// Znode is one node of the tree as Server.Znodes shows it: what a client
// reading it would get, without a request.
type Znode struct {
	Path string
	Data []byte
	Stat zk.Stat
	ACL  []zk.ACL
}

// Znodes returns every node of the committed tree, sorted by path, with
// its data, stat and ACL: what Dump renders, as data. It is not a
// request, so it takes no zxid and sets no watch.
func (s *Server) Znodes() []Znode {
	s.mu.Lock()
	defer s.mu.Unlock()
	paths := make([]string, 0, len(s.st.tree.nodes))
	for p := range s.st.tree.nodes {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	out := make([]Znode, 0, len(paths))
	for _, p := range paths {
		n := s.st.tree.nodes[p]
		out = append(out, Znode{Path: p, Data: slices.Clone(n.data), Stat: n.stat(), ACL: slices.Clone(n.acl)})
	}
	return out
}
