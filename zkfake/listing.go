package zkfake

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
)

// minKeptListing is the fewest children for which a node's sorted listing
// is kept between reads; smaller directories sort faster than a kept
// listing costs its writes.
const minKeptListing = 32

// maxListingShift bounds the names a write may move to keep a listing in
// order. A bigger shift — an insert or delete far from the end of a huge
// directory — drops the listing instead, to be sorted again by the next
// read.
const maxListingShift = 1 << 16

// listings keeps, for each node whose children have been listed, their
// names in order, and keeps them up to date as children come and go. A lock
// directory is listed by every waiter it wakes: without it, a queue of a
// thousand waiters was sorted anew for every wakeup, which was a third of
// the cost of handing the lock on.
//
// Reads fill it from many goroutines at once, under mu; writes change it
// only while they hold the server's lock exclusively, when no read runs.
type listings struct {
	mu    sync.Mutex
	names map[*znode]*listing
}

// listing is one kept listing. Its names are packed: copied, in order,
// into one string they are cut from, as go-zookeeper decodes a reply's
// names one after another into memory. A client that reads every name of
// a listing (a lock's waiter looks for its predecessor in the whole queue)
// then reads them in a row, as it does a real reply's; names that point
// into the tree's nodes, scattered over the heap, took it twice as long.
// The names of creates since the packing point into their nodes: loose
// counts them, and the listing is packed again once a quarter are. The
// price is memory: a name a client keeps keeps its whole packed string,
// deleted names included until the next packing (a listing's worth of
// bytes, where go-zookeeper's names are allocated one by one).
type listing struct {
	names []string
	loose int
}

// pack copies the names into one string and cuts them from it.
func (ls *listing) pack() {
	size := 0
	for _, name := range ls.names {
		size += len(name)
	}
	var b strings.Builder
	b.Grow(size)
	for _, name := range ls.names {
		b.WriteString(name)
	}
	packed, at := b.String(), 0
	for i, name := range ls.names {
		ls.names[i] = packed[at : at+len(name)]
		at += len(name)
	}
	ls.loose = 0
}

// children returns n's child names in order, in a slice of the caller's
// own. ZooKeeper returns them in hash-set order, which no client may rely
// on; sorting keeps the fake deterministic, and shuffleListing, with
// WithShuffledChildren, puts the copy in a seeded order instead.
func (l *listings) children(n *znode) []string {
	if len(n.children) < minKeptListing {
		return sortedNames(n)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ls, ok := l.names[n]
	if !ok {
		ls = &listing{names: sortedNames(n)}
		ls.pack()
		if l.names == nil {
			l.names = map[*znode]*listing{}
		}
		l.names[n] = ls
	} else if 4*ls.loose > len(ls.names) {
		ls.pack()
	}
	return slices.Clone(ls.names)
}

// sortedNames lists n's children by name.
func sortedNames(n *znode) []string {
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// added notes a new child of parent.
func (l *listings) added(parent *znode, name string) {
	ls, ok := l.names[parent]
	if !ok {
		return
	}
	i, _ := slices.BinarySearch(ls.names, name)
	if len(ls.names)-i > maxListingShift {
		delete(l.names, parent)
		return
	}
	ls.names = slices.Insert(ls.names, i, name)
	ls.loose++
}

// removed notes that parent lost a child. (The child, childless, has no
// listing kept: a listing goes once its directory shrinks below
// minKeptListing.)
func (l *listings) removed(parent *znode, name string) {
	ls, ok := l.names[parent]
	if !ok {
		return
	}
	i, found := slices.BinarySearch(ls.names, name)
	switch {
	case !found:
	case len(ls.names) < minKeptListing || len(ls.names)-i > maxListingShift:
		delete(l.names, parent)
	default:
		ls.names = slices.Delete(ls.names, i, i+1)
	}
}

// byCreation puts a directory's listing in the order its children were
// made, a multi's (which share a zxid) by name blind to GUIDs: the order
// shuffleListing permutes. Sorted by name, a seed's shuffle would hang on
// the GUIDs in the names (see order.go), and a scenario run twice would
// list one directory two ways.
func byCreation(t *tree, dir string, names []string) {
	if len(names) < 2 {
		return
	}
	type child struct {
		czxid int64
		name  string
	}
	children := make([]child, len(names))
	buf := make([]byte, 0, len(dir)+64)
	for i, name := range names {
		buf = append(buf[:0], dir...)
		if dir != "/" {
			buf = append(buf, '/')
		}
		buf = append(buf, name...)
		children[i].name = name
		if n := t.nodes[string(buf)]; n != nil {
			children[i].czxid = n.czxid
		}
	}
	slices.SortFunc(children, func(a, b child) int {
		return byCreationThenPath(a.czxid, b.czxid, a.name, b.name)
	})
	for i, c := range children {
		names[i] = c.name
	}
}

// shuffleListing puts a directory's listing in an order drawn from seed,
// the directory's path and its pzxid, which moves with every child created
// or deleted. Drawing from those rather than from a generator that each
// listing advances keeps the core free of hidden state: reads that run in
// parallel under the shared lock need no lock of their own, the order does
// not depend on how they interleave, every member lists the same state the
// same way, and an unchanged directory lists the same way twice, as a
// ZooKeeper hash set does.
func shuffleListing(names []string, seed uint64, path string, pzxid int64) {
	if len(names) < 2 {
		return
	}
	// FNV-1a of the path.
	h := uint64(14695981039346656037)
	for i := 0; i < len(path); i++ {
		h ^= uint64(path[i])
		h *= 1099511628211
	}
	r := rand.New(rand.NewPCG(seed^h, uint64(pzxid)))
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
}
