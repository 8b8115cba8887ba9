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

// notification is a watch event bound for one session.
type notification struct {
	session int64
	event   zk.Event
}

// watchEvent is the event the server sends for a fired watch.
func watchEvent(t zk.EventType, path string) zk.Event {
	return zk.Event{Type: t, State: zk.StateSyncConnected, Path: path}
}

// created fires the watches a create of path triggers.
func (w watchTable) created(path string) []notification {
	var out []notification
	for _, id := range take(w.data, path, nil) {
		out = append(out, notification{id, watchEvent(zk.EventNodeCreated, path)})
	}
	parent := parentOf(path)
	for _, id := range take(w.child, parent, nil) {
		out = append(out, notification{id, watchEvent(zk.EventNodeChildrenChanged, parent)})
	}
	return out
}

// deleted fires the watches a delete of path triggers. A session holding both
// a data and a child watch on path gets one NodeDeleted, as ZooKeeper sends.
func (w watchTable) deleted(path string) []notification {
	var out []notification
	told := map[int64]bool{}
	for _, id := range take(w.data, path, nil) {
		told[id] = true
		out = append(out, notification{id, watchEvent(zk.EventNodeDeleted, path)})
	}
	for _, id := range take(w.child, path, told) {
		out = append(out, notification{id, watchEvent(zk.EventNodeDeleted, path)})
	}
	parent := parentOf(path)
	for _, id := range take(w.child, parent, nil) {
		out = append(out, notification{id, watchEvent(zk.EventNodeChildrenChanged, parent)})
	}
	return out
}

// changed fires the watches a setData of path triggers.
func (w watchTable) changed(path string) []notification {
	var out []notification
	for _, id := range take(w.data, path, nil) {
		out = append(out, notification{id, watchEvent(zk.EventNodeDataChanged, path)})
	}
	return out
}
