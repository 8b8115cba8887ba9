package zkfake

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// The extras: ZooKeeper 3.8 requests that go-zookeeper v1.0.4 cannot send,
// as methods of Conn beside the *zk.Conn method set — persistent and
// recursive watches (AddWatch), RemoveWatches and CheckWatches, MultiRead,
// GetEphemerals, GetAllChildrenNumber, WhoAmI, and Create2, a create that
// returns the new node's stat. Code written against *zk.Conn cannot call
// them; a test that needs them holds the *zkfake.Conn itself, and the served
// fake (zkfake/wire) answers them for clients that send them, from the same
// core. Like Multi, they check no path on the client's side: the server's
// answer to a malformed one is what they return.

// AddWatchMode is the mode of a watch AddWatch sets, ZooKeeper's
// AddWatchMode.
type AddWatchMode int32

const (
	// AddWatchModePersistent is a watch that stays after it fires and
	// fires for the node at its path: NodeCreated, NodeDataChanged,
	// NodeChildrenChanged and NodeDeleted (and NodeCreated again if the
	// node comes back).
	AddWatchModePersistent AddWatchMode = 0
	// AddWatchModePersistentRecursive is a watch that stays after it fires
	// and fires for the node at its path and every node below it, at any
	// depth: NodeCreated, NodeDataChanged and NodeDeleted, never
	// NodeChildrenChanged.
	AddWatchModePersistentRecursive AddWatchMode = 1
)

// WatcherType names the watches CheckWatches and RemoveWatches look at,
// ZooKeeper's Watcher.WatcherType. A persistent watch counts as both kinds.
type WatcherType int32

const (
	// WatcherTypeChildren is the child watches: ChildrenW's.
	WatcherTypeChildren WatcherType = 1
	// WatcherTypeData is the data watches: GetW's and ExistsW's.
	WatcherTypeData WatcherType = 2
	// WatcherTypeAny is both.
	WatcherTypeAny WatcherType = 3
)

// The events with which a client ends the watches RemoveWatches removed,
// ZooKeeper's EventType 5 to 7, for which go-zookeeper has no names. The
// server sends none of them: ZooKeeper's own client raises them for the
// watchers it drops, and the fake's Conn does the same on the watch
// channels.
const (
	// EventDataWatchRemoved ends a data or exists watch.
	EventDataWatchRemoved zk.EventType = 5
	// EventChildWatchRemoved ends a child watch.
	EventChildWatchRemoved zk.EventType = 6
	// EventPersistentWatchRemoved ends a persistent or recursive watch.
	EventPersistentWatchRemoved zk.EventType = 7
)

// ErrNoWatcher is ZooKeeper's NoWatcher (-121): CheckWatches and
// RemoveWatches found no watch of the type on the path. go-zookeeper has
// no value for it.
var ErrNoWatcher = errors.New("zk: no such watcher")

// ClientInfo is one identity of a session, as WhoAmI reports it: the
// scheme, and the user the scheme names — for "ip" the client's address,
// for "digest" the user name before the colon, for "sasl" the name a SASL
// login proved (AddSASLIdentity).
type ClientInfo struct {
	Scheme string
	User   string
}

// GetDataRequest is a read of a node's data and stat in a MultiRead.
type GetDataRequest struct{ Path string }

// GetChildrenRequest is a read of a node's children in a MultiRead.
type GetChildrenRequest struct{ Path string }

// MultiReadResponse is the result of one op of a MultiRead: Data and Stat
// for a GetDataRequest, Children for a GetChildrenRequest, or the op's own
// Error.
type MultiReadResponse struct {
	Data     []byte
	Stat     *zk.Stat
	Children []string
	Error    error
}

// AddWatch sets a persistent watch on path, ZooKeeper 3.8's addWatch, and
// returns the channel its events come on. Unlike the one-shot watches it
// stays after it fires, and it is set whether or not the node exists. With
// AddWatchModePersistent it fires for the node at path — NodeCreated,
// NodeDataChanged, NodeChildrenChanged, NodeDeleted, and NodeCreated
// again if the node comes back; with AddWatchModePersistentRecursive for
// that node and every node below it, and never NodeChildrenChanged. Its
// events also come on the session's event channel, as every watch's do.
//
// The channel delivers every event, in order, however far its reader falls
// behind; it ends with EventPersistentWatchRemoved when RemoveWatches
// removes the watch (WatcherTypeAny), or EventNotWatching when the session
// expires or the Conn closes, and is then closed. Read it until it closes,
// or close the Server, which closes it at once: its events wait for their
// reader in a goroutine of its own.
//
// The server keeps one watch per session, path and table (data and child),
// the last one set winning, and a persistent watch is in both tables: a
// GetW on a path watched persistently makes the data half of the watch
// one-shot again (ZooKeeper 3.8 does this; the channel stays open, and once
// that data watch has fired it hears only the child events). After a reconnect the client sets its persistent
// watches again, and, as ZooKeeper 3.8 does, hears nothing of what changed
// while it was away. A mode other than the two fails with ZooKeeper's
// MarshallingError ("unknown error: -5").
func (c *Conn) AddWatch(path string, mode AddWatchMode) (<-chan zk.Event, error) {
	kind := watchPersistent
	if mode == AddWatchModePersistentRecursive {
		kind = watchPersistentRecursive
	}
	var q *eventQueue
	err := c.exchange("addWatch", path, headerSize+stringSize(path)+4, func(st *state) error {
		err := c.srv.viewOf(c).addWatch(c.session, path, int32(mode))
		c.readOp("addWatch", path, zk.Stat{}, err)
		if err == nil {
			q = c.addPersistent(path, kind)
		}
		return err
	})
	if err != nil {
		if q != nil {
			// The reply was lost: the caller never gets the channel.
			c.srv.mu.Lock()
			c.dropPersistent(watchKey{path, kind}, q)
			c.srv.mu.Unlock()
		}
		return nil, err
	}
	return q.out, nil
}

// RemoveWatches removes the session's watches of a type on path,
// ZooKeeper's removeWatches (the Java client's removeAllWatches), whatever
// their mode: WatcherTypeData removes the data watches and the data half of
// a persistent watch, WatcherTypeChildren the child watches and the child
// half, WatcherTypeAny all of them. It fails with ErrNoWatcher if the
// session had none there, and with MarshallingError ("unknown error: -5")
// for an unknown type.
//
// The server sends nothing about it. As ZooKeeper's client does, the Conn
// ends the channels of the watches it dropped itself, each with one event
// on its path, and closes them: EventDataWatchRemoved for GetW and ExistsW
// channels (WatcherTypeData or Any), EventChildWatchRemoved for ChildrenW
// channels (Children or Any), EventPersistentWatchRemoved for AddWatch
// channels (Any only: removing one half leaves the other firing, and the
// channel open). Nothing comes on the session's event channel.
func (c *Conn) RemoveWatches(path string, watcherType WatcherType) error {
	return c.exchange("removeWatches", path, headerSize+stringSize(path)+4, func(st *state) error {
		err := c.srv.viewOf(c).removeWatches(c.session, path, int32(watcherType))
		c.readOp("removeWatches", path, zk.Stat{}, err)
		if err == nil {
			c.removeWatchers(path, watcherType)
		}
		return err
	})
}

// CheckWatches asks the server whether a watch of the type is set on path,
// ZooKeeper's checkWatches (which the Java client sends to remove one
// watcher of several locally): nil if so, ErrNoWatcher if not,
// MarshallingError ("unknown error: -5") for an unknown type. ZooKeeper
// 3.8 answers whether any session watches the path on the server the
// client is connected to, not only this one, and so does the fake; a
// recursive watch on an ancestor does not count. It walks the path with an
// iterator that finds nothing at "" and fails with MarshallingError on a
// path with no '/' (and, while a recursive watch is set, on any relative
// path not watched itself).
func (c *Conn) CheckWatches(path string, watcherType WatcherType) error {
	return c.read("checkWatches", path, func(st *state) error {
		err := c.srv.viewOf(c).checkWatches(path, int32(watcherType))
		c.readOp("checkWatches", path, zk.Stat{}, err)
		return err
	})
}

// MultiRead reads several nodes in one request, ZooKeeper 3.8's multiRead:
// ops are *GetDataRequest and *GetChildrenRequest, and each is answered on
// its own, with its result or its error (zk.ErrNoNode, zk.ErrNoAuth) in its
// MultiReadResponse, none failing the others. Unlike Multi it is no
// transaction: it takes no zxid and sets no watch. Write ops
// (*zk.CreateRequest, *zk.CreateTTLRequest and the others Multi takes)
// fail the whole request with MarshallingError ("unknown error: -5"), as
// the server refuses them; an op of another type fails before anything is
// sent.
func (c *Conn) MultiRead(ops ...any) ([]MultiReadResponse, error) {
	size := headerSize + 9
	for _, op := range ops {
		switch op := op.(type) {
		case *GetDataRequest:
			size += 9 + stringSize(op.Path) + 1
		case *GetChildrenRequest:
			size += 9 + stringSize(op.Path) + 1
		case *zk.CreateTTLRequest:
			size += 9 + createSize(op.Path, op.Data, op.Acl) - headerSize + 8
		default:
			n, err := multiSize([]any{op})
			if err != nil {
				return nil, err
			}
			size += n - headerSize - 9
		}
	}
	var out []MultiReadResponse
	err := c.read("multiRead", multiReadPath(firstOf(ops)), func(st *state) error {
		var err error
		out, err = st.multiRead(c.srv.viewOf(c), c.session, ops)
		c.readOp("multiRead", multiReadPath(firstOf(ops)), zk.Stat{}, err)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func multiReadPath(op any) string {
	switch op := op.(type) {
	case *GetDataRequest:
		return op.Path
	case *GetChildrenRequest:
		return op.Path
	}
	return multiPath(op)
}

// GetEphemerals returns the paths of the ephemeral nodes the session owns
// whose path starts with prefix, all of them for "" or "/", ZooKeeper
// 3.8's getEphemerals. The server takes prefix as it is, with no path
// check. It lists them in its hash set's order; the fake sorts them.
func (c *Conn) GetEphemerals(prefix string) ([]string, error) {
	var out []string
	err := c.read("getEphemerals", prefix, func(st *state) error {
		out = st.getEphemerals(c.srv.viewOf(c), c.session, prefix)
		c.readOp("getEphemerals", prefix, zk.Stat{}, nil)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GetAllChildrenNumber returns how many nodes lie below path, at every
// depth, ZooKeeper 3.8's getAllChildrenNumber: for "/" every node but the
// root, /zookeeper and its two children included. It needs READ on the
// node (zk.ErrNoAuth) and fails with zk.ErrNoNode on a missing one — and on
// a malformed path, which the server looks up as it is.
func (c *Conn) GetAllChildrenNumber(path string) (int32, error) {
	var n int32
	err := c.read("getAllChildrenNumber", path, func(st *state) error {
		var err error
		n, err = st.getAllChildrenNumber(c.srv.viewOf(c), c.session, path)
		c.readOp("getAllChildrenNumber", path, zk.Stat{}, err)
		return err
	})
	return n, err
}

// WhoAmI returns the session's identities, ZooKeeper 3.8's whoAmI: "ip"
// with the client's address (127.0.0.1 on the fake), and one "digest"
// identity per user added with AddAuth, in the order the server keeps them
// — its hash set's, which the fake computes as ZooKeeper does.
func (c *Conn) WhoAmI() ([]ClientInfo, error) {
	var out []ClientInfo
	err := c.read("whoAmI", "", func(st *state) error {
		out = st.whoAmI(c.session)
		c.readOp("whoAmI", "", zk.Stat{}, nil)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AddSASLIdentity adds sasl:id to the session's identities, as ZooKeeper
// 3.8 does once a SASL login on the session's connection completes
// (ZooKeeperServer.processSasl): the "sasl" ACL scheme then matches it
// (WithSASLScheme), the "auth" scheme takes it and WhoAmI lists it. The
// fake runs no SASL exchange itself: package wire serves DIGEST-MD5 logins
// and calls this with the name a login proved. A name ZooKeeper's
// KerberosName refuses (an '@' outside service[/host]@realm) makes the
// server's login fail with an exception before the identity is added:
// AddSASLIdentity adds nothing and returns zk.ErrBadArguments.
//
// Unlike AddAuth's, the identity is not presented again to the session
// that follows an expiry: a SASL login is a connection's, and its client
// logs in again on every connection it opens.
func (c *Conn) AddSASLIdentity(id string) error {
	if !kerberosName(id) {
		return zk.ErrBadArguments
	}
	// The server takes a login outside its request pipeline
	// (ZooKeeperServer.processSasl): no lost-reply rule applies to it.
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.st.addIdentity(c.session, authID{"sasl", id})
	c.readOp("sasl", id, zk.Stat{}, err)
	return err
}

// Create2 creates a znode, as Create, CreateContainer or CreateTTL do, and
// returns its path and its stat from the same transaction: the request the
// Java client's create(path, data, acl, mode, stat, ttl) sends —
// createTTL when the flags name a TTL mode (ttl is the TTL, at least a
// millisecond), createContainer for a container, create2 for the others
// (ttl is ignored) — whose Create2Response go-zookeeper v1.0.4 cannot read.
// It makes none of go-zookeeper's checks on the client's side: the server
// answers bad flags and bad paths with zk.ErrBadArguments.
func (c *Conn) Create2(path string, data []byte, flags int32, acl []zk.ACL, ttl time.Duration) (string, *zk.Stat, error) {
	op, ttlMs, size := "create2", int64(-1), createSize(path, data, acl)
	switch kind, _, _ := decodeFlags(flags); kind {
	case kindTTL:
		op, ttlMs, size = "createTTL", ttl.Milliseconds(), size+8
	case kindContainer:
		op = "createContainer"
	}
	var (
		created string
		stat    zk.Stat
	)
	err := c.exchange(op, path, size, func(st *state) error {
		input := func() string { return fmt.Sprintf("flags=%d data=%q", flags, data) }
		return c.write(st, op, path, input, func(ctx writeCtx) (string, zk.Stat, error) {
			var err error
			created, stat, err = st.create(ctx, createOp{path: path, data: data, acl: acl, flags: flags, ttl: ttlMs})
			return created, stat, err
		})
	})
	if err != nil {
		return "", nil, err
	}
	return created, &stat, nil
}

// eventQueue is a persistent watch's channel. The server fires watches while
// it holds its lock and must never wait for a reader, and a persistent watch
// may fire any number of times before its reader looks: the queue holds
// what its reader has not taken, and a goroutine of its own, running only
// while there is something to deliver, hands the events over in order.
// Once ended, it closes the channel after the last event; a closed Server
// (halt) stops it at once, and so does dropping a channel nobody was given
// (cancel).
type eventQueue struct {
	out    chan zk.Event
	halt   <-chan struct{}
	cancel chan struct{}

	mu      sync.Mutex
	pending []zk.Event
	pumping bool
	ended   bool
	closed  bool
}

func newEventQueue(halt <-chan struct{}) *eventQueue {
	return &eventQueue{out: make(chan zk.Event), halt: halt, cancel: make(chan struct{})}
}

// push queues an event, unless the queue has ended.
func (q *eventQueue) push(ev zk.Event) { q.add(ev, false) }

// end queues a last event and closes the channel after it.
func (q *eventQueue) end(last zk.Event) { q.add(last, true) }

func (q *eventQueue) add(ev zk.Event, last bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.ended {
		return
	}
	q.pending = append(q.pending, ev)
	q.ended = last
	if !q.pumping {
		q.pumping = true
		go q.pump()
	}
}

func (q *eventQueue) pump() {
	for {
		q.mu.Lock()
		if len(q.pending) == 0 {
			q.pumping = false
			q.closeIfEnded()
			q.mu.Unlock()
			return
		}
		ev := q.pending[0]
		q.pending = q.pending[1:]
		q.mu.Unlock()
		select {
		case q.out <- ev:
		case <-q.halt:
			q.stop()
			return
		case <-q.cancel:
			q.stop()
			return
		}
	}
}

// stop drops what is left undelivered and closes the channel.
func (q *eventQueue) stop() {
	q.mu.Lock()
	q.pending, q.pumping, q.ended = nil, false, true
	q.closeIfEnded()
	q.mu.Unlock()
}

// closeIfEnded closes the channel of an ended queue, once. Called with
// q.mu held.
func (q *eventQueue) closeIfEnded() {
	if q.ended && !q.closed {
		q.closed = true
		close(q.out)
	}
}

// addPersistent hands out a new persistent watch channel. Called with
// srv.mu held.
func (c *Conn) addPersistent(path string, kind watchType) *eventQueue {
	q := newEventQueue(c.srv.halt)
	key := watchKey{path, kind}
	c.persistent[key] = append(c.persistent[key], q)
	return q
}

// dropPersistent forgets a persistent watch channel that its caller never
// got (AddWatch's reply was lost) and closes it, undelivered events and
// all. The server may hold the watch still — the client re-armed it if it
// reconnected meanwhile — and its events then come on the session's
// channel only, until the next reconnect, which does not re-arm it.
// Called with srv.mu held.
func (c *Conn) dropPersistent(key watchKey, q *eventQueue) {
	qs := c.persistent[key]
	for i, have := range qs {
		if have == q {
			qs = append(qs[:i:i], qs[i+1:]...)
			break
		}
	}
	if len(qs) == 0 {
		delete(c.persistent, key)
	} else {
		c.persistent[key] = qs
	}
	close(q.cancel)
	q.mu.Lock()
	if !q.pumping {
		q.pending, q.ended = nil, true
		q.closeIfEnded()
	}
	q.mu.Unlock()
}

// receivePersistent hands a watch event to the persistent watch channels it
// concerns, as ZooKeeper's client picks them (ZKWatchManager.materialize):
// persistent watches on the event's path, recursive ones on the path and
// on every ancestor. Called with srv.mu held.
func (c *Conn) receivePersistent(ev zk.Event) {
	if len(c.persistent) == 0 {
		return
	}
	for _, q := range c.persistent[watchKey{ev.Path, watchPersistent}] {
		q.push(ev)
	}
	for p := ev.Path; ; p = parentOf(p) {
		for _, q := range c.persistent[watchKey{p, watchPersistentRecursive}] {
			q.push(ev)
		}
		if p == "/" || !strings.HasPrefix(p, "/") {
			return
		}
	}
}

// removeWatchers ends the client's watch channels that a removeWatches of
// the type on path removed, each with the removal event ZooKeeper's client
// raises. Called with srv.mu held.
func (c *Conn) removeWatchers(path string, typ WatcherType) {
	end := func(kind watchType, t zk.EventType) {
		c.fireWatchers(watchKey{path, kind}, zk.Event{Type: t, State: zk.StateSyncConnected, Path: path})
	}
	if typ == WatcherTypeData || typ == WatcherTypeAny {
		end(watchData, EventDataWatchRemoved)
		end(watchExist, EventDataWatchRemoved)
	}
	if typ == WatcherTypeChildren || typ == WatcherTypeAny {
		end(watchChild, EventChildWatchRemoved)
	}
	if typ == WatcherTypeAny {
		for _, kind := range []watchType{watchPersistent, watchPersistentRecursive} {
			key := watchKey{path, kind}
			for _, q := range c.persistent[key] {
				q.end(zk.Event{Type: EventPersistentWatchRemoved, State: zk.StateSyncConnected, Path: path})
			}
			delete(c.persistent, key)
		}
	}
}
