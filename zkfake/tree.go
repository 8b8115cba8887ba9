package zkfake

import (
	"github.com/go-zookeeper/zk"
)

// nodeKind tells the lifetime rule of a znode beyond persistent/ephemeral.
type nodeKind uint8

const (
	kindPersistent nodeKind = iota
	kindEphemeral
	kindContainer
	kindTTL
)

// znode is one node of the tree. Its fields are plain data, owned by the
// tree; nothing here blocks or runs on its own. Its fields are ordered so
// that the struct fits the allocator's 128-byte size class.
type znode struct {
	data []byte
	acl  []zk.ACL
	ttl  int64 // milliseconds, for kindTTL

	czxid, mzxid, pzxid int64
	ctime, mtime        int64
	ephemeralOwner      int64
	version             int32
	aversion            int32

	// creates counts the children ever created under this node. ZooKeeper
	// stores exactly this as the "cversion", draws sequence numbers from it,
	// and reports cversion to clients as 2*creates - numChildren (every
	// child not present any more was deleted, and each delete is a change).
	creates int32
	kind    nodeKind

	// children is nil until the node has had a child.
	children map[string]struct{}
}

// stat is the node's zk.Stat as the server reports it.
func (n *znode) stat() zk.Stat {
	numChildren := int32(len(n.children))
	return zk.Stat{
		Czxid:          n.czxid,
		Mzxid:          n.mzxid,
		Pzxid:          n.pzxid,
		Ctime:          n.ctime,
		Mtime:          n.mtime,
		Version:        n.version,
		Cversion:       n.creates*2 - numChildren,
		Aversion:       n.aversion,
		EphemeralOwner: n.ephemeralOwner,
		DataLength:     int32(len(n.data)),
		NumChildren:    numChildren,
	}
}

// tree is the znode tree: a map from absolute path to node.
type tree struct {
	nodes map[string]*znode
	// reapable counts the container and TTL nodes, so the server runs its
	// reaper only while there is something to reap.
	reapable int
	// listings keeps the sorted child names of listed directories.
	listings listings
}

// newTree returns the tree a fresh ZooKeeper 3.8 server starts with: the root
// and /zookeeper with its quota and config children. DataTree makes each
// with new byte[0], so their data reads back empty, not null (a client
// tells the two apart). An ensemble's members then fill in the
// configuration node (Server.initConfigNode).
func newTree() *tree {
	t := &tree{nodes: map[string]*znode{}}
	world := zk.WorldACL(zk.PermAll)
	t.nodes["/"] = &znode{data: []byte{}, acl: world, children: map[string]struct{}{"zookeeper": {}}}
	t.nodes["/zookeeper"] = &znode{data: []byte{}, acl: world, children: map[string]struct{}{"quota": {}, "config": {}}}
	t.nodes["/zookeeper/quota"] = &znode{data: []byte{}, acl: world, children: map[string]struct{}{}}
	// The dynamic configuration node is read-only to everyone, and its
	// aversion is -1 (DataTree.addConfigNode sets its ACL with version -1).
	t.nodes[configPath] = &znode{data: []byte{}, acl: zk.WorldACL(zk.PermRead), aversion: -1, children: map[string]struct{}{}}
	return t
}

// get returns the node at path, or nil.
func (t *tree) get(path string) *znode { return t.nodes[path] }

// add links a new node at path under its existing parent.
func (t *tree) add(path string, n *znode, zxid int64) {
	t.link(t.nodes[parentOf(path)], path, n, zxid)
}

// link adds n at path under parent, unless parent already has a child of
// that name, and reports whether it did. The parent's children map answers
// "is it there?" and "put it there" in one step — its length grows only if
// the name is new — which spares a create a lookup in the big path map.
func (t *tree) link(parent *znode, path string, n *znode, zxid int64) bool {
	if parent.children == nil {
		parent.children = map[string]struct{}{}
	}
	before := len(parent.children)
	parent.children[baseName(path)] = struct{}{}
	if len(parent.children) == before {
		return false
	}
	parent.creates++
	parent.pzxid = zxid
	t.nodes[path] = n
	t.count(n, 1)
	t.listings.added(parent, baseName(path))
	return true
}

// unadd reverses add, restoring the parent's pzxid.
func (t *tree) unadd(path string, n *znode, oldPzxid int64) {
	parent := t.nodes[parentOf(path)]
	delete(parent.children, baseName(path))
	parent.creates--
	parent.pzxid = oldPzxid
	delete(t.nodes, path)
	t.count(n, -1)
	t.listings.removed(parent, baseName(path))
}

func (t *tree) count(n *znode, delta int) {
	if n.kind == kindContainer || n.kind == kindTTL {
		t.reapable += delta
	}
}

// remove unlinks the childless node at path from its parent.
func (t *tree) remove(path string, zxid int64) {
	t.unlink(t.nodes[parentOf(path)], path, t.nodes[path], zxid)
}

// unlink is remove for a caller that has the node and its parent at hand.
func (t *tree) unlink(parent *znode, path string, n *znode, zxid int64) {
	delete(parent.children, baseName(path))
	if zxid > parent.pzxid {
		parent.pzxid = zxid
	}
	t.count(n, -1)
	delete(t.nodes, path)
	t.listings.removed(parent, baseName(path))
}

// unremove reverses remove, restoring the parent's pzxid.
func (t *tree) unremove(path string, n *znode, oldPzxid int64) {
	parent := t.nodes[parentOf(path)]
	if parent.children == nil {
		parent.children = map[string]struct{}{}
	}
	parent.children[baseName(path)] = struct{}{}
	parent.pzxid = oldPzxid
	t.nodes[path] = n
	t.count(n, 1)
	t.listings.added(parent, baseName(path))
}

// isSpecial reports the paths ZooKeeper refuses to delete.
func isSpecial(path string) bool {
	switch path {
	case "/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config":
		return true
	}
	return false
}

// descendants counts the nodes below n, at path, at every depth.
func (t *tree) descendants(path string, n *znode) int {
	count := len(n.children)
	for name := range n.children {
		child := joinPath(path, name)
		if c := t.nodes[child]; c != nil && len(c.children) > 0 {
			count += t.descendants(child, c)
		}
	}
	return count
}
