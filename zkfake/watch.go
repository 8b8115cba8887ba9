package zkfake

import (
	"sort"

	"github.com/go-zookeeper/zk"
)

// watchTable is the server's side of the watches: which sessions wait on
// which paths. As in ZooKeeper's WatchManager there are two tables — data
// watches (set by getData and exists) and child watches (set by
// getChildren) — and a session holds at most one watch of each kind on a
// path; the client fans one event out to every channel it handed out.
type watchTable struct {
	data  map[string]map[int64]struct{}
	child map[string]map[int64]struct{}
}

func newWatchTable() watchTable {
	return watchTable{data: map[string]map[int64]struct{}{}, child: map[string]map[int64]struct{}{}}
}

func addWatch(table map[string]map[int64]struct{}, path string, session int64) {
	set := table[path]
	if set == nil {
		set = map[int64]struct{}{}
		table[path] = set
	}
	set[session] = struct{}{}
}

// take removes and returns, in session order, the sessions watching path in
// table, skipping those in already.
func take(table map[string]map[int64]struct{}, path string, already map[int64]bool) []int64 {
	set := table[path]
	if len(set) == 0 {
		return nil
	}
	delete(table, path)
	ids := make([]int64, 0, len(set))
	for id := range set {
		if !already[id] {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// dropSession forgets every watch of a session, as the server does when the
// session's connection goes away.
func (w watchTable) dropSession(session int64) {
	for _, table := range []map[string]map[int64]struct{}{w.data, w.child} {
		for path, set := range table {
			delete(set, session)
			if len(set) == 0 {
				delete(table, path)
			}
		}
	}
}

// count returns how many sessions watch path, data and child watches
// together.
func (w watchTable) count(path string) int {
	return len(w.data[path]) + len(w.child[path])
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

// watchEvent is the event the server sends for a fired watch.
func watchEvent(t zk.EventType, path string) zk.Event {
	return zk.Event{Type: t, State: zk.StateSyncConnected, Path: path}
}

// created fires the watches a create of path triggers: data watches on the
// node, checked against its ACL, and child watches on the parent, checked
// against the parent's.
func (w watchTable) created(path string, acl, parentACL []zk.ACL) []notification {
	var out []notification
	for _, id := range take(w.data, path, nil) {
		out = append(out, notification{id, watchEvent(zk.EventNodeCreated, path), acl})
	}
	parent := parentOf(path)
	for _, id := range take(w.child, parent, nil) {
		out = append(out, notification{id, watchEvent(zk.EventNodeChildrenChanged, parent), parentACL})
	}
	return out
}

// deleted fires the watches a delete of path triggers. A session holding both
// a data and a child watch on path gets one NodeDeleted, as ZooKeeper sends.
func (w watchTable) deleted(path string, acl, parentACL []zk.ACL) []notification {
	var out []notification
	told := map[int64]bool{}
	for _, id := range take(w.data, path, nil) {
		told[id] = true
		out = append(out, notification{id, watchEvent(zk.EventNodeDeleted, path), acl})
	}
	for _, id := range take(w.child, path, told) {
		out = append(out, notification{id, watchEvent(zk.EventNodeDeleted, path), acl})
	}
	parent := parentOf(path)
	for _, id := range take(w.child, parent, nil) {
		out = append(out, notification{id, watchEvent(zk.EventNodeChildrenChanged, parent), parentACL})
	}
	return out
}

// changed fires the watches a setData of path triggers.
func (w watchTable) changed(path string, acl []zk.ACL) []notification {
	var out []notification
	for _, id := range take(w.data, path, nil) {
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

// fire resolves a trigger against the table.
func (w watchTable) fire(t trigger) []notification {
	switch t.kind {
	case triggerCreated:
		return w.created(t.path, t.acl, t.parentACL)
	case triggerDeleted:
		return w.deleted(t.path, t.acl, t.parentACL)
	default:
		return w.changed(t.path, t.acl)
	}
}

// watchType is go-zookeeper's client-side kind of watch: the same server
// watch fans out to different channels by the call that set it. The three
// kinds are also the three lists of the SetWatches request by which a
// reconnecting client re-arms its watches.
type watchType uint8

const (
	watchData  watchType = iota // GetW, or ExistsW on an existing node
	watchExist                  // ExistsW on a missing node
	watchChild                  // ChildrenW
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
// reconnecting to v's member, re-arms its watches: each watch fires at once
// if it missed an event (missedEvent) and is set again in v's tables
// otherwise — data and exist watches in the data table, child watches in
// the child table. It sorts keys as go-zookeeper's request lists them,
// data watches, then exist watches, then child watches, and each list by
// path, where go-zookeeper's order is its map's: the fake's events come in
// an order that does not vary from run to run. It returns the watches that
// fired, in that order.
func (v view) setWatches(session, lastZxid int64, keys []watchKey) []notification {
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].kind != keys[j].kind {
			return keys[i].kind < keys[j].kind
		}
		return keys[i].path < keys[j].path
	})
	var fired []notification
	for _, k := range keys {
		if t, missed := missedEvent(k.kind, v.tree.get(k.path), lastZxid); missed {
			fired = append(fired, notification{session, watchEvent(t, k.path), nil})
			continue
		}
		if k.kind == watchChild {
			addWatch(v.watches.child, k.path, session)
		} else {
			addWatch(v.watches.data, k.path, session)
		}
	}
	return fired
}
