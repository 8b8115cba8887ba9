package linearizability

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// znodeRecord is one znode of a tree snapshot.
type znodeRecord struct {
	path    string
	data    string
	version int32
	// creates counts the children ever created under this znode. It is
	// the sequence number the next sequential child gets; ZooKeeper keeps
	// this count and reports Cversion as 2*creates - numChildren, so that
	// Cversion counts both creations and deletions.
	creates  int32
	children int32
	owner    int64 // ephemeral owner, 0 for a persistent znode
}

func (n znodeRecord) stat() ZnodeStat {
	return ZnodeStat{
		Version:        n.version,
		Cversion:       2*n.creates - n.children,
		NumChildren:    n.children,
		EphemeralOwner: n.owner,
	}
}

// tree is an immutable snapshot of the tracked znodes, sorted by path.
// Operations return a new tree and leave the receiver untouched.
type tree []znodeRecord

func (t tree) find(path string) (int, bool) {
	return slices.BinarySearchFunc(t, path, func(n znodeRecord, p string) int { return strings.Compare(n.path, p) })
}

// childrenOf returns the sorted names of the children of path.
func (t tree) childrenOf(path string) []string {
	prefix := path + "/"
	if path == "/" {
		prefix = "/"
	}
	var names []string
	i, _ := t.find(prefix)
	for ; i < len(t) && strings.HasPrefix(t[i].path, prefix); i++ {
		rest := t[i].path[len(prefix):]
		if rest != "" && !strings.Contains(rest, "/") {
			names = append(names, rest)
		}
	}
	return names
}

// parentOf returns the parent path of a znode path.
func parentOf(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}

// validPath reports whether ZooKeeper accepts path as a znode path.
func validPath(path string) bool {
	if path == "/" {
		return true
	}
	if !strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") {
		return false
	}
	for _, part := range strings.Split(path[1:], "/") {
		if part == "" || part == "." || part == ".." || strings.ContainsRune(part, 0) {
			return false
		}
	}
	return true
}

// with returns a copy of t with n inserted or replaced at i.
func (t tree) with(i int, n znodeRecord, insert bool) tree {
	out := make(tree, 0, len(t)+1)
	out = append(out, t[:i]...)
	out = append(out, n)
	if insert {
		return append(out, t[i:]...)
	}
	return append(out, t[i+1:]...)
}

// create applies a create. known reports whether the tree decides if a path
// exists; a parent it does not decide is taken to exist, persistent, as the
// scenario's base znode does. It returns the new tree and the created path,
// or the error ZooKeeper gives, checked in ZooKeeper's order.
func (t tree) create(in ZnodeInput, known func(string) bool) (tree, string, error) {
	parentPath := parentOf(in.Path)
	parentIndex, parentFound := -1, false
	if known(parentPath) {
		parentIndex, parentFound = t.find(parentPath)
		if !parentFound {
			return nil, "", zk.ErrNoNode
		}
	}
	path := in.Path
	if in.Flags&zk.FlagSequence != 0 {
		if !parentFound {
			// Ruled out before the model is built: the sequence
			// number under a parent the tree does not hold is unknown.
			return nil, "", zk.ErrBadArguments
		}
		path += fmt.Sprintf("%010d", t[parentIndex].creates)
	}
	if !validPath(path) || path == "/" {
		return nil, "", zk.ErrBadArguments
	}
	i, exists := t.find(path)
	if exists {
		return nil, "", zk.ErrNodeExists
	}
	if parentFound && t[parentIndex].owner != 0 {
		return nil, "", zk.ErrNoChildrenForEphemerals
	}
	node := znodeRecord{path: path, data: in.Data}
	if in.Flags&zk.FlagEphemeral != 0 {
		node.owner = in.Session
	}
	out := t.with(i, node, true)
	if parentFound {
		// The parent sorts before its children, so the insertion did
		// not move it.
		out[parentIndex].creates++
		out[parentIndex].children++
	}
	return out, path, nil
}

// remove applies a delete.
func (t tree) remove(path string, version int32) (tree, error) {
	i, exists := t.find(path)
	switch {
	case !exists:
		return nil, zk.ErrNoNode
	case version != -1 && version != t[i].version:
		return nil, zk.ErrBadVersion
	case t[i].children > 0:
		return nil, zk.ErrNotEmpty
	}
	out := make(tree, 0, len(t)-1)
	out = append(out, t[:i]...)
	out = append(out, t[i+1:]...)
	if p, found := out.find(parentOf(path)); found {
		out[p].children--
	}
	return out, nil
}

// set applies a setData, returning the znode's new stat.
func (t tree) set(path, data string, version int32) (tree, ZnodeStat, error) {
	i, exists := t.find(path)
	switch {
	case !exists:
		return nil, ZnodeStat{}, zk.ErrNoNode
	case version != -1 && version != t[i].version:
		return nil, ZnodeStat{}, zk.ErrBadVersion
	}
	n := t[i]
	n.data = data
	n.version++
	if n.version == -1 {
		// ZooKeeper skips -1, which means "any version" (ZOOKEEPER-4743).
		n.version = 0
	}
	return t.with(i, n, false), n.stat(), nil
}

// expire deletes the ephemeral znodes of session; ok is false when it had
// none.
func (t tree) expire(session int64) (out tree, ok bool) {
	for _, n := range t {
		if n.owner == session {
			ok = true
			break
		}
	}
	if !ok {
		return t, false
	}
	out = make(tree, 0, len(t))
	for _, n := range t {
		if n.owner != session {
			out = append(out, n)
		}
	}
	for _, n := range t {
		if n.owner == session {
			if p, found := out.find(parentOf(n.path)); found {
				out[p].children--
			}
		}
	}
	return out, true
}

func (t tree) hash() uint64 {
	h := newHasher()
	for _, n := range t {
		h = h.string(n.path).string(n.data).int(int64(n.version)).int(int64(n.creates)).int(int64(n.children)).int(n.owner)
	}
	return uint64(h)
}

func (t tree) String() string {
	parts := make([]string, len(t))
	for i, n := range t {
		s := n.stat()
		parts[i] = fmt.Sprintf("%s=%s v%d c%d", n.path, shortData(n.data), s.Version, s.Cversion)
		if n.owner != 0 {
			parts[i] += " ephemeral " + sessionName(n.owner)
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// shortData quotes znode data for descriptions, cut to a readable length.
func shortData(data string) string {
	const limit = 24
	if len(data) > limit {
		return fmt.Sprintf("%q…", data[:limit])
	}
	return fmt.Sprintf("%q", data)
}

// treeVersion is one committed state in a chain of them: the write history
// a stale read may look back into.
type treeVersion struct {
	parent *treeVersion
	index  int
	nodes  tree
	// hash covers nodes; chainHash covers this version and every earlier
	// one, so that equal chains hash alike.
	hash, chainHash uint64
}

func rootVersion(nodes tree) *treeVersion {
	h := nodes.hash()
	return &treeVersion{nodes: nodes, hash: h, chainHash: uint64(newHasher().int(int64(h)))}
}

// next returns the version that follows v with nodes.
func (v *treeVersion) next(nodes tree) *treeVersion {
	h := nodes.hash()
	return &treeVersion{
		parent:    v,
		index:     v.index + 1,
		nodes:     nodes,
		hash:      h,
		chainHash: uint64(newHasher().int(int64(v.chainHash)).int(int64(h))),
	}
}

// sameChain reports whether two chains hold the same states. Chains built
// along different linearizations share their common prefix, so the walk
// stops at the first shared version.
func sameChain(a, b *treeVersion) bool {
	for a != b {
		if a == nil || b == nil || a.index != b.index || a.hash != b.hash || !slices.Equal(a.nodes, b.nodes) {
			return false
		}
		a, b = a.parent, b.parent
	}
	return true
}
