package targets

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
)

// python-zk/kazoo#58: kazoo's DataWatch (kazoo/recipe/watchers.py, kazoo
// 1.0 as it was at 385e632, just before the fix 318f073 of kazoo 1.1),
// ported with allow_missing_node=True, over kazoo 1.0's client, which
// forgets every watcher when the connection goes (catalogue_kazoo.go).
// _get_data, when it found the node missing, called the function with
// None and kept the prior data it had; the exists watcher then took that
// prior data for a get watch already set, and did nothing.

func kazoo58() KnownBug {
	return KnownBug{
		Name:   "python-zk/kazoo#58",
		Title:  "DataWatch allow_missing_node=True fails after seeing a deletion",
		Recipe: "DataWatch, kazoo's watch-driven cache of a node's data (kazoo.recipe.watchers, kazoo 1.0)",
		Mechanism: "DataWatch with allow_missing_node=True keeps the last data it saw in _prior_data; when the node is deleted it calls the function with None and sets an exists watch, but leaves _prior_data as it was. " +
			"When the node is created again the exists watcher runs _get_data(using_exists=True), which takes the prior data for proof that a get watch is already set and returns: no watch is left, and the function is never called again.",
		Schedule:  "no fault: the node is created, the DataWatch sees its data, another client deletes it and creates it again",
		Symptom:   "the DataWatch's function last said the node does not exist, and is never called again, while the node exists and changes",
		Fixed:     "fixed in kazoo 1.1 (commit 318f073, 2013-04-28): _get_data clears _prior_data when the node is missing",
		Detectors: []fuzz.Detector{fuzz.Convergence},
		Mark:      "last said it does not exist",
		Target:    NodeDataWatch(newKazooDataWatch10),
		// The bug needs no fault. Under a connection loss kazoo 1.0's
		// DataWatch reads the node again when it is CONNECTED once more,
		// which heals it; the faults only make its schedule rarer.
		Options: []fuzz.Option{fuzz.WithoutFaults(fuzz.AllFaults()...)},
	}
}

// NodeWatcher follows one node's data as its client uses it: Start
// begins following, and tells listener the node's data (exists false
// while it is missing) at first and at each change after.
type NodeWatcher interface {
	Start(listener func(data []byte, exists bool)) error
}

// NewNodeWatcher makes the NodeWatcher one process uses, on its
// connection, for the node at path.
type NewNodeWatcher func(ctx context.Context, client fuzz.Client, path string) NodeWatcher

// NodeDataWatch is the Target of a watch-driven cache of one node's data,
// described as a Recipe: client 0 Watches the node /config/watched/node
// (starts its NodeWatcher) and keeps what its listener was last told, as
// a user of the watch keeps it; the other clients Set the node's data,
// Delete it and Create it. Its Settled holds the listener's view to the
// server: once everything has settled, it is the node's data, or missing
// when the node is (Convergence).
func NodeDataWatch(newWatcher NewNodeWatcher) fuzz.Target {
	return fuzz.Recipe[*nodeWatchClient]{
		Name: "data-watch",
		Path: "/config/watched",
		New: func(ctx context.Context, client fuzz.Client, dir string) *nodeWatchClient {
			c := &nodeWatchClient{conn: client, node: dir + "/node", n: client.N}
			if client.N == 0 {
				c.watcher = newWatcher(ctx, client, c.node)
			}
			return c
		},
		Ops: []fuzz.Op[*nodeWatchClient]{
			{Name: "Watch", Enabled: func(c *nodeWatchClient) bool { return c.n == 0 && !c.started }, Call: (*nodeWatchClient).watch},
			{Name: "Look", Enabled: func(c *nodeWatchClient) bool { return c.n == 0 && c.started }, Call: func(*nodeWatchClient, context.Context, *fuzz.Call) error { return nil }},
			{Name: "Set", Enabled: func(c *nodeWatchClient) bool { return c.n != 0 }, Call: (*nodeWatchClient).set},
			{Name: "Delete", Enabled: func(c *nodeWatchClient) bool { return c.n != 0 }, Call: (*nodeWatchClient).delete},
			{Name: "Create", Enabled: func(c *nodeWatchClient) bool { return c.n != 0 }, Call: (*nodeWatchClient).create},
		},
		Settled: (*nodeWatchClient).settled,
	}
}

// nodeWatchClient is one process of the data watch's Recipe.
type nodeWatchClient struct {
	conn    fuzz.Client
	node    string
	n       int
	writes  int
	watcher NodeWatcher
	started bool
	// told, view and exists are what the listener was last told, written
	// on the watcher's goroutines and read by Settled; mu guards them.
	mu     sync.Mutex
	told   bool
	view   []byte
	exists bool
}

func (c *nodeWatchClient) watch(context.Context, *fuzz.Call) error {
	c.started = true
	return c.watcher.Start(func(data []byte, exists bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.told, c.view, c.exists = true, data, exists
	})
}

// data is what a writer writes: unique to the write.
func (c *nodeWatchClient) data() []byte {
	c.writes++
	return fmt.Appendf(nil, "written by client %d, session %#x, write %d", c.n, c.conn.Conn.SessionID(), c.writes)
}

func (c *nodeWatchClient) set(context.Context, *fuzz.Call) error {
	_, err := c.conn.Conn.Set(c.node, c.data(), -1)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

func (c *nodeWatchClient) delete(context.Context, *fuzz.Call) error {
	err := c.conn.Conn.Delete(c.node, -1)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

func (c *nodeWatchClient) create(context.Context, *fuzz.Call) error {
	for _, p := range []string{path.Dir(path.Dir(c.node)), path.Dir(c.node)} {
		if _, err := c.conn.Conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	_, err := c.conn.Conn.Create(c.node, c.data(), 0, zk.WorldACL(zk.PermAll))
	if errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return err
}

func (c *nodeWatchClient) settled(v fuzz.View) string {
	if c.n != 0 {
		return ""
	}
	data, _, err := v.Read.Get(c.node)
	exists := err == nil
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.told || (exists == c.exists && string(data) == string(c.view)) {
		return ""
	}
	switch {
	case !exists:
		return fmt.Sprintf("%s does not exist, and the watch's function last said it holds %q", c.node, c.view)
	case !c.exists:
		return fmt.Sprintf("%s holds %q, and the watch's function last said it does not exist", c.node, data)
	}
	return fmt.Sprintf("%s holds %q, and the watch's function last said it holds %q", c.node, data, c.view)
}

// kazooDataWatch10 is DataWatch(client, path, func,
// allow_session_lost=True, allow_missing_node=True) as kazoo 1.0 had it.
// Its function is the listener; kazoo calls watchers and listeners on
// its handler's thread, the port on goroutines of its own, which
// _run_lock (runLock) serialises as it does kazoo's spawned _get_data.
// Left out: allow_missing_node=False and a function returning False
// (stopping the watch, _stopped), which the campaign does not use.
type kazooDataWatch10 struct {
	client *kazooClient
	path   string
	fn     func(data []byte, exists bool)

	// runLock is _run_lock: a channel, so that a watcher waiting for it
	// is durably blocked in a synctest bubble (one waiting on a
	// sync.Mutex is not, and would keep the harness from ever seeing the
	// clients settle).
	runLock chan struct{}
	// watchEstablished is set under runLock, and cleared by the session
	// listener without it, as kazoo 1.0 did: atomic, for Go's memory
	// model.
	watchEstablished atomic.Bool
	// prior is _prior_data: had false for the empty tuple; stat nil for
	// a node that did not exist.
	prior struct {
		had  bool
		data []byte
		stat *zk.Stat
	}
}

func newKazooDataWatch10(ctx context.Context, client fuzz.Client, p string) NodeWatcher {
	c := newKazooClient(client.Conn, true)
	c.listen(ctx, client.Events)
	return &kazooDataWatch10{client: c, path: p, runLock: make(chan struct{}, 1)}
}

// Start is the DataWatch's construction with func set: the session
// listener, then the first _get_data.
func (w *kazooDataWatch10) Start(listener func(data []byte, exists bool)) error {
	w.fn = listener
	w.client.addListener(w.sessionWatcher)
	w.getData(false)
	return nil
}

// getData is _get_data; the exceptions kazoo would raise out of it (the
// retry's, once the client is closed) end it, as they end kazoo's.
func (w *kazooDataWatch10) getData(usingExists bool) {
	w.runLock <- struct{}{}
	defer func() { <-w.runLock }()
	if usingExists && w.prior.had {
		// "We were able to get data after the first exists check,
		// abort _get_data since there's a separate watcher for it now":
		// the bug, as a deletion left the prior data in place.
		return
	}
	retry := commandRetry(w.client)
	var data []byte
	var stat *zk.Stat
	err := retry.call(func() (err error) { data, stat, err = w.client.getStat(w.path, w.watcher); return err })
	if errors.Is(err, zk.ErrNoNode) {
		data = nil
		// This sets stat to nil if the node does not yet exist.
		err = retry.call(func() (err error) { stat, err = w.client.existsStat(w.path, w.existsWatcher); return err })
		if err != nil {
			return
		}
		if stat != nil {
			// Apparently the node now exists... try again.
			err = retry.call(func() (err error) { data, stat, err = w.client.getStat(w.path, w.watcher); return err })
		} else {
			// Return here, so as not to say there was prior data.
			w.fn(nil, false)
			return
		}
	}
	if err != nil {
		return
	}
	if !w.watchEstablished.Load() {
		w.watchEstablished.Store(true)
		// Data that has not changed since the prior session: nothing
		// to tell.
		if w.prior.had {
			if w.prior.stat == nil {
				if stat == nil {
					return
				}
			} else if stat != nil && w.prior.stat.Mzxid == stat.Mzxid {
				return
			}
		}
	}
	w.prior.had, w.prior.data, w.prior.stat = true, data, stat
	w.fn(data, stat != nil)
}

func (w *kazooDataWatch10) watcher(zk.Event) { w.getData(false) }

func (w *kazooDataWatch10) existsWatcher(zk.Event) { w.getData(true) }

// sessionWatcher is _session_watcher (the watch is never stopped: the
// function never returns False).
func (w *kazooDataWatch10) sessionWatcher(s kazooState) {
	switch s {
	case kazooLost, kazooSuspended:
		w.watchEstablished.Store(false)
	case kazooConnected:
		if !w.watchEstablished.Load() {
			go w.getData(false)
		}
	}
}
