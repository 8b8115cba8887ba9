package zkfake

import (
	"slices"
	"sort"
	"strings"

	"github.com/go-zookeeper/zk"
)

// watchTable is the server's side of the watches: which sessions wait on
// which paths, and how. As in ZooKeeper's WatchManager there are two tables
// — data watches (set by getData and exists) and child watches (set by
// getChildren) — and a session holds at most one watch in each on a path;
// the client fans one event out to every channel it handed out. A
// persistent watch (addWatch) is set in both tables at once.
type watchTable struct {
	data  watchSet
	child watchSet
}

func newWatchTable() watchTable {
	return watchTable{data: newWatchSet(), child: newWatchSet()}
}

// watchMode is how a session watches a path in one table. ZooKeeper 3.8
// keeps one mode per session, path and table (WatcherModeManager), the
// last one set winning: a getData watch set on a path the session watches
// persistently makes the data half of that watch one-shot again.
type watchMode uint8

const (
	modeStandard            watchMode = iota // getData, exists, getChildren: fires once
	modePersistent                           // addWatch mode 0: stays, fires for the node
	modePersistentRecursive                  // addWatch mode 1: stays, fires for the node and its descendants
)

// watchSet is one of the two tables.
type watchSet struct {
	paths map[string]map[int64]watchMode
	// recursive counts the recursive watches on each path, so that a
	// change looks at its node's ancestors only while there are any, as
	// WatchManager's recursiveQty spares it the walk.
	recursive map[string]int
	// spare keeps the sets of paths whose last watch went, empty, for the
	// next path watched: most watches are set on a node, fire once, and
	// are set on another node next (a lock's contenders watch a new
	// predecessor each time), and a new set cost two allocations.
	spare *[]map[int64]watchMode
}

// maxSpareSets bounds how many empty sets a watchSet keeps for reuse, and
// maxSpareSetSize the sessions a set may have held to be kept: a map keeps
// the room it grew to, and a set that served a crowd would make every
// later firing of its next path walk that room.
const (
	maxSpareSets    = 16
	maxSpareSetSize = 8
)

func newWatchSet() watchSet {
	return watchSet{paths: map[string]map[int64]watchMode{}, recursive: map[string]int{}, spare: new([]map[int64]watchMode)}
}

// add sets session's watch on path to mode, replacing the mode it had.
func (w watchSet) add(path string, session int64, mode watchMode) {
	set := w.paths[path]
	if set == nil {
		if n := len(*w.spare); n > 0 {
			set, *w.spare = (*w.spare)[n-1], (*w.spare)[:n-1]
		} else {
			set = map[int64]watchMode{}
		}
		w.paths[path] = set
	}
	old, had := set[session]
	set[session] = mode
	w.countRecursive(path, had && old == modePersistentRecursive, mode == modePersistentRecursive)
}

// remove drops session's watch on path, whatever its mode, and reports
// whether there was one.
func (w watchSet) remove(path string, session int64) bool {
	set := w.paths[path]
	mode, ok := set[session]
	if !ok {
		return false
	}
	delete(set, session)
	if len(set) == 0 {
		w.forget(path, set, 1)
	}
	w.countRecursive(path, mode == modePersistentRecursive, false)
	return true
}

// forget drops path's set, which is empty and held at most had sessions,
// and keeps it for reuse if it stayed small.
func (w watchSet) forget(path string, set map[int64]watchMode, had int) {
	delete(w.paths, path)
	if had <= maxSpareSetSize && len(*w.spare) < maxSpareSets {
		*w.spare = append(*w.spare, set)
	}
}

func (w watchSet) countRecursive(path string, was, is bool) {
	switch {
	case was && !is:
		if w.recursive[path]--; w.recursive[path] == 0 {
			delete(w.recursive, path)
		}
	case is && !was:
		w.recursive[path]++
	}
}

// contains is ZooKeeper 3.8's WatchManager.containsWatcher, what
// checkWatches asks: at the path itself it looks for any watcher, not the
// asking session's, and a recursive watch above the path does not count.
// It walks the path with the server's PathParentIterator, which sees no
// element in "" and throws on a path that has no '/' — at once — or whose
// walk up reaches one, which it walks only while the table holds a
// recursive watch: the server answers those with MarshallingError.
func (w watchSet) contains(path string) (bool, error) {
	switch {
	case path == "":
		return false, nil
	case !strings.Contains(path, "/"):
		return false, errMarshalling
	case len(w.paths[path]) > 0:
		return true, nil
	case len(w.recursive) > 0 && !strings.HasPrefix(path, "/"):
		return false, errMarshalling
	}
	return false, nil
}

// trigger is WatchManager.triggerWatch: it appends to ids the sessions a
// change of type t at path notifies from this table, in session order,
// each once. Watches on
// path fire, and the one-shot ones among them are used up; recursive
// watches on path and on its ancestors fire too, but never for
// NodeChildrenChanged (a recursive watch hears of every child's own
// creation and deletion instead).
func (w watchSet) trigger(ids []int64, path string, t zk.EventType) []int64 {
	start := len(ids)
	if set := w.paths[path]; len(set) > 0 {
		had := len(set)
		for id, mode := range set {
			switch {
			case mode == modePersistentRecursive && t == zk.EventNodeChildrenChanged:
				continue
			case mode == modeStandard:
				delete(set, id)
			}
			ids = append(ids, id)
		}
		if len(set) == 0 {
			w.forget(path, set, had)
		}
	}
	if len(w.recursive) > 0 && t != zk.EventNodeChildrenChanged {
		for p := path; p != "/"; {
			p = parentOf(p)
			if w.recursive[p] == 0 {
				continue
			}
			for id, mode := range w.paths[p] {
				if mode == modePersistentRecursive {
					ids = append(ids, id)
				}
			}
		}
	}
	if len(ids)-start < 2 {
		return ids
	}
	slices.Sort(ids[start:])
	return append(ids[:start], slices.Compact(ids[start:])...)
}

// dropSession forgets every watch of a session, as the server does when the
// session's connection goes away.
func (w watchTable) dropSession(session int64) {
	for _, set := range []watchSet{w.data, w.child} {
		for path, sessions := range set.paths {
			if _, ok := sessions[session]; ok {
				set.remove(path, session)
			}
		}
	}
}

// count returns how many sessions watch path, data and child watches
// together.
func (w watchTable) count(path string) int {
	return len(w.data.paths[path]) + len(w.child.paths[path])
}

// total returns how many watches the table holds, over all paths.
func (w watchTable) total() int {
	n := 0
	for _, set := range []watchSet{w.data, w.child} {
		for _, sessions := range set.paths {
			n += len(sessions)
		}
	}
	return n
}

// notification is a watch event bound for one session. acl is the ACL the
// server checks the session's READ permission against before it sends the
// event (ZooKeeper 3.8.4 and later, and Debian's 3.8.0 with the
// CVE-2024-23944 fix); nil means no check.
type notification struct {
	session int64
	event   zk.Event
	acl     []zk.ACL
}

// maxKeptFired bounds the notifications whose array a commit keeps for the
// next (see reuseFired).
const maxKeptFired = 64

// reuseFired returns the array of the last commit's notifications, emptied,
// for the next commit's; or none, if a crowd was notified, so that one
// expiry that fired thousands of watches does not keep their room for the
// server's lifetime.
func reuseFired(last []notification) []notification {
	if cap(last) > maxKeptFired {
		return nil
	}
	clear(last)
	return last[:0]
}

// watchEvent is the event the server sends for a fired watch.
func watchEvent(t zk.EventType, path string) zk.Event {
	return zk.Event{Type: t, State: zk.StateSyncConnected, Path: path}
}

// sessionsBuffer is room on the stack for the sessions a change notifies:
// one or two, nearly always.
type sessionsBuffer [4]int64

// created fires the watches a create of path triggers, appending their
// notifications to out: data watches on the node (and recursive ones above
// it), checked against its ACL, and child watches on the parent, checked
// against the parent's.
func (w watchTable) created(out []notification, path string, acl, parentACL []zk.ACL) []notification {
	var buf sessionsBuffer
	for _, id := range w.data.trigger(buf[:0], path, zk.EventNodeCreated) {
		out = append(out, notification{id, watchEvent(zk.EventNodeCreated, path), acl})
	}
	parent := parentOf(path)
	for _, id := range w.child.trigger(buf[:0], parent, zk.EventNodeChildrenChanged) {
		out = append(out, notification{id, watchEvent(zk.EventNodeChildrenChanged, parent), parentACL})
	}
	return out
}

// deleted fires the watches a delete of path triggers, appending their
// notifications to out. A session holding both a data and a child watch on
// path gets one NodeDeleted, as ZooKeeper sends.
func (w watchTable) deleted(out []notification, path string, acl, parentACL []zk.ACL) []notification {
	var told, buf sessionsBuffer
	toldIDs := w.data.trigger(told[:0], path, zk.EventNodeDeleted)
	for _, id := range toldIDs {
		out = append(out, notification{id, watchEvent(zk.EventNodeDeleted, path), acl})
	}
	for _, id := range w.child.trigger(buf[:0], path, zk.EventNodeDeleted) {
		if !slices.Contains(toldIDs, id) {
			out = append(out, notification{id, watchEvent(zk.EventNodeDeleted, path), acl})
		}
	}
	parent := parentOf(path)
	for _, id := range w.child.trigger(buf[:0], parent, zk.EventNodeChildrenChanged) {
		out = append(out, notification{id, watchEvent(zk.EventNodeChildrenChanged, parent), parentACL})
	}
	return out
}

// changed fires the watches a setData of path triggers, appending their
// notifications to out.
func (w watchTable) changed(out []notification, path string, acl []zk.ACL) []notification {
	var buf sessionsBuffer
	for _, id := range w.data.trigger(buf[:0], path, zk.EventNodeDataChanged) {
		out = append(out, notification{id, watchEvent(zk.EventNodeDataChanged, path), acl})
	}
	return out
}

// triggerKind is what a staged change does to the watches.
type triggerKind uint8

const (
	triggerCreated triggerKind = iota
	triggerDeleted
	triggerChanged
)

// trigger is a watch-firing change of a write in progress. The server fires
// watches only when it applies a transaction, so a multi stages its
// triggers and fires them at commit; a failed multi leaves every watch set.
type trigger struct {
	kind           triggerKind
	path           string
	acl, parentACL []zk.ACL
}

// fire resolves a trigger against the table, appending the notifications
// to out.
func (w watchTable) fire(out []notification, t trigger) []notification {
	switch t.kind {
	case triggerCreated:
		return w.created(out, t.path, t.acl, t.parentACL)
	case triggerDeleted:
		return w.deleted(out, t.path, t.acl, t.parentACL)
	default:
		return w.changed(out, t.path, t.acl)
	}
}

// watchType is the client's kind of watch: the same server watch fans out
// to different channels by the call that set it. The first three are
// go-zookeeper's, one-shot; the last two are persistent watches (AddWatch),
// which go-zookeeper v1.0.4 cannot set and ZooKeeper 3.8's Java client
// keeps as this fake does. The five kinds are also the five lists of the
// SetWatches2 request by which a reconnecting client re-arms its watches.
type watchType uint8

const (
	watchData                watchType = iota // GetW, or ExistsW on an existing node
	watchExist                                // ExistsW on a missing node
	watchChild                                // ChildrenW
	watchPersistent                           // AddWatch(path, AddWatchModePersistent)
	watchPersistentRecursive                  // AddWatch(path, AddWatchModePersistentRecursive)
)

// watchKey names the client's watch channels on one path of one kind.
type watchKey struct {
	path string
	kind watchType
}

// The kinds of client watch each event type fires, in go-zookeeper's order.
// Package-level so that receiving an event allocates nothing.
var (
	firedByCreated         = []watchType{watchExist}
	firedByDataChanged     = []watchType{watchExist, watchData}
	firedByChildrenChanged = []watchType{watchChild}
	firedByDeleted         = []watchType{watchExist, watchData, watchChild}
)

// kindsFiredBy returns the kinds of the client's watches on an event's path
// that an event of type t fires, and so closes, in the order they fire:
// go-zookeeper's table (recvLoop), copied so that the same channels fire
// on the fake. Any other type (a session event, NotWatching) fires none.
// The slice is shared: callers must not change it.
func kindsFiredBy(t zk.EventType) []watchType {
	switch t {
	case zk.EventNodeCreated:
		return firedByCreated
	case zk.EventNodeDataChanged:
		return firedByDataChanged
	case zk.EventNodeChildrenChanged:
		return firedByChildrenChanged
	case zk.EventNodeDeleted:
		return firedByDeleted
	}
	return nil
}

// missedEvent is ZooKeeper's rule (DataTree.setWatches) for one watch that a
// reconnecting client re-arms, given its node n (nil if there is none) and
// lastZxid, the last zxid the client saw: the event that tells the client
// what changed, and whether the watch missed it and so fires at once. A
// data watch misses a delete, or a data change after lastZxid; an exist
// watch misses a create (the client saw no node); a child watch misses a
// delete, or a change of children after lastZxid. A watch that missed
// nothing is set again: the client has seen the node as it is.
func missedEvent(kind watchType, n *znode, lastZxid int64) (zk.EventType, bool) {
	switch {
	case kind == watchExist:
		return zk.EventNodeCreated, n != nil
	case n == nil:
		return zk.EventNodeDeleted, true
	case kind == watchData:
		return zk.EventNodeDataChanged, n.mzxid > lastZxid
	default:
		return zk.EventNodeChildrenChanged, n.pzxid > lastZxid
	}
}

// setWatches answers the SetWatches request with which a session's client,
// reconnecting to v's member, re-arms its watches: each one-shot watch fires
// at once if it missed an event (missedEvent) and is set again in v's tables
// otherwise — data and exist watches in the data table, child watches in
// the child table. A persistent watch is set again and fires nothing:
// ZooKeeper 3.8 tells its client nothing of what changed while it was away
// (DataTree.setWatches). It sorts keys as the request lists them, data
// watches, then exist, child, persistent and recursive watches, and each
// list by path (blind to GUIDs, see order.go), where go-zookeeper's order
// is its map's: the fake's events come in an order that does not vary
// from run to run; and a path both
// watched once and persistently ends persistent, as on the server, which
// reads the lists in that order. It returns the watches that fired, in
// order.
func (v view) setWatches(session, lastZxid int64, keys []watchKey) []notification {
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].kind != keys[j].kind {
			return keys[i].kind < keys[j].kind
		}
		return byPathBlindToGUIDs(keys[i].path, keys[j].path) < 0
	})
	var fired []notification
	for _, k := range keys {
		switch k.kind {
		case watchPersistent:
			v.watches.add(k.path, session, modePersistent)
			continue
		case watchPersistentRecursive:
			v.watches.add(k.path, session, modePersistentRecursive)
			continue
		}
		if t, missed := missedEvent(k.kind, v.tree.get(k.path), lastZxid); missed {
			fired = append(fired, notification{session, watchEvent(t, k.path), nil})
			continue
		}
		if k.kind == watchChild {
			v.watches.child.add(k.path, session, modeStandard)
		} else {
			v.watches.data.add(k.path, session, modeStandard)
		}
	}
	return fired
}

// add sets a persistent watch, as addWatch does: in both tables, with the
// same mode.
func (w watchTable) add(path string, session int64, mode watchMode) {
	w.data.add(path, session, mode)
	w.child.add(path, session, mode)
}

// addWatch sets a persistent watch, ZooKeeper's addWatch request: mode 0
// (persistent) or 1 (persistent and recursive). Any other mode fails the
// request with MarshallingError, as the server's WatcherMode.fromZooDef
// throws. Neither the path nor the node is checked: the server sets the
// watch on whatever path it is given, and a node created there later fires
// it.
func (v view) addWatch(session int64, path string, mode int32) error {
	switch mode {
	case addWatchPersistent:
		v.watches.add(path, session, modePersistent)
	case addWatchPersistentRecursive:
		v.watches.add(path, session, modePersistentRecursive)
	default:
		return errMarshalling
	}
	return nil
}

// The modes of addWatch and the watcher types of checkWatches and
// removeWatches, as the protocol numbers them.
const (
	addWatchPersistent          = 0
	addWatchPersistentRecursive = 1

	watcherChildren = 1
	watcherData     = 2
	watcherAny      = 3
)

// ofType returns the tables a watcher type names: the child table, the
// data table, or both. A persistent watch, which is in both, counts as
// either. An unknown type fails the request with MarshallingError, as the
// server's WatcherType.fromInt throws.
func (w watchTable) ofType(typ int32) ([]watchSet, error) {
	switch typ {
	case watcherChildren:
		return []watchSet{w.child}, nil
	case watcherData:
		return []watchSet{w.data}, nil
	case watcherAny:
		return []watchSet{w.child, w.data}, nil
	}
	return nil, errMarshalling
}

// checkWatches answers ZooKeeper 3.8's checkWatches: NoWatcher unless some
// session — any session, not only the one asking — watches path in a table
// of the type (watchSet.contains). For WatcherAny the server asks both
// tables, the child table first, and fails if either fails.
func (v view) checkWatches(path string, typ int32) error {
	sets, err := v.watches.ofType(typ)
	if err != nil {
		return err
	}
	found := false
	for _, set := range sets {
		ok, err := set.contains(path)
		if err != nil {
			return err
		}
		found = found || ok
	}
	if !found {
		return ErrNoWatcher
	}
	return nil
}

// removeWatches answers removeWatches: it drops the session's watches on
// path from the tables of the type, whatever their mode — removing the data
// watches leaves a persistent watch's child half, which goes on firing as
// it would alone — and fails with NoWatcher if there were none. The server
// tells the client nothing; its client raises the removal events itself.
func (v view) removeWatches(session int64, path string, typ int32) error {
	sets, err := v.watches.ofType(typ)
	if err != nil {
		return err
	}
	removed := false
	for _, set := range sets {
		if set.remove(path, session) {
			removed = true
		}
	}
	if !removed {
		return ErrNoWatcher
	}
	return nil
}
