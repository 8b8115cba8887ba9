package zktest

import (
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/jute"
)

// Request is a request a Conn made by Wrap is about to send, named in
// ZooKeeper's terms so that a log of them reads like the server's.
type Request struct {
	// Op is the request's name in ZooKeeper's protocol: create,
	// createContainer, createTTL, delete, exists, getData, setData,
	// getChildren, multi, sync, getACL, setACL, setAuth, or close.
	Op   string
	Path string // the node; empty for multi, setAuth and close
	// Detail renders the other arguments that say what the request does:
	// a create's flags ("ephemeral sequential", "protected ephemeral
	// sequential"), a version other than -1 ("version 3"), "watch", a
	// multi's number of ops, an auth scheme.
	Detail string
	Write  bool // the request may change the tree (close ends a session)
	Watch  bool // the request sets a watch
	// Arrival numbers the request in the order a server read the
	// client's requests, across all its connections (wire's gate sets
	// it); 0 where nothing numbers them, as in Wrap.
	Arrival int64
}

// Reply is what a wrapped request returned, as far as a hook needs it.
type Reply struct {
	Path     string   // a create's path
	Exists   bool     // an exists request's answer
	Stat     *zk.Stat // the node's stat, where the call returns one
	Children []string // a listing
	Err      error
}

// Hooks are what a Conn made by Wrap calls around each request; every
// field is optional.
type Hooks struct {
	// Before is called before a request is sent; what it returns is
	// handed to After, so that a hook can follow one call through.
	Before func(req Request) any
	// After is called once the request returned.
	After func(req Request, before any, reply Reply)
	// Events, if set, is given the event channel of each watch set and
	// returns the one the caller gets.
	Events func(req Request, events <-chan zk.Event) <-chan zk.Event
	// Local is called before SessionID, State and Server, which send
	// nothing: they read the client's own state.
	Local func(method string)
}

// Wrap returns a Conn that forwards every call to conn and calls hooks
// around it: the one way this module observes or steers a connection's
// traffic (CountingConn counts with it; the fuzz harness gates every
// request on it). CreateProtectedEphemeralSequential is one request to the
// hooks, though go-zookeeper may send a listing after a lost reply.
func Wrap(conn Conn, hooks Hooks) Conn { return &wrapped{conn, hooks} }

type wrapped struct {
	conn  Conn
	hooks Hooks
}

func (w *wrapped) before(req Request) any {
	if w.hooks.Before == nil {
		return nil
	}
	return w.hooks.Before(req)
}

func (w *wrapped) after(req Request, before any, reply Reply) {
	if w.hooks.After != nil {
		w.hooks.After(req, before, reply)
	}
}

func (w *wrapped) events(req Request, ch <-chan zk.Event) <-chan zk.Event {
	if w.hooks.Events == nil || ch == nil {
		return ch
	}
	return w.hooks.Events(req, ch)
}

func (w *wrapped) local(method string) {
	if w.hooks.Local != nil {
		w.hooks.Local(method)
	}
}

// create is every flavour of create: one request, its path the reply.
func (w *wrapped) create(req Request, send func() (string, error)) (string, error) {
	req.Write = true
	b := w.before(req)
	p, err := send()
	w.after(req, b, Reply{Path: p, Err: err})
	return p, err
}

func (w *wrapped) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	return w.create(Request{Op: "create", Path: path, Detail: jute.DescribeFlags(flags)}, func() (string, error) {
		return w.conn.Create(path, data, flags, acl)
	})
}

func (w *wrapped) CreateContainer(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	return w.create(Request{Op: "createContainer", Path: path, Detail: jute.DescribeFlags(flags)}, func() (string, error) {
		return w.conn.CreateContainer(path, data, flags, acl)
	})
}

func (w *wrapped) CreateTTL(path string, data []byte, flags int32, acl []zk.ACL, ttl time.Duration) (string, error) {
	return w.create(Request{Op: "createTTL", Path: path, Detail: jute.DescribeFlags(flags) + " ttl " + ttl.String()}, func() (string, error) {
		return w.conn.CreateTTL(path, data, flags, acl, ttl)
	})
}

func (w *wrapped) CreateProtectedEphemeralSequential(path string, data []byte, acl []zk.ACL) (string, error) {
	return w.create(Request{Op: "create", Path: path, Detail: "protected ephemeral sequential"}, func() (string, error) {
		return w.conn.CreateProtectedEphemeralSequential(path, data, acl)
	})
}

func (w *wrapped) Delete(path string, version int32) error {
	req := Request{Op: "delete", Path: path, Detail: jute.DescribeVersion(version), Write: true}
	b := w.before(req)
	err := w.conn.Delete(path, version)
	w.after(req, b, Reply{Err: err})
	return err
}

func (w *wrapped) Exists(path string) (bool, *zk.Stat, error) {
	req := Request{Op: "exists", Path: path}
	b := w.before(req)
	ok, st, err := w.conn.Exists(path)
	w.after(req, b, Reply{Exists: ok, Stat: st, Err: err})
	return ok, st, err
}

func (w *wrapped) ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	req := Request{Op: "exists", Path: path, Detail: "watch", Watch: true}
	b := w.before(req)
	ok, st, ch, err := w.conn.ExistsW(path)
	w.after(req, b, Reply{Exists: ok, Stat: st, Err: err})
	return ok, st, w.events(req, ch), err
}

func (w *wrapped) Get(path string) ([]byte, *zk.Stat, error) {
	req := Request{Op: "getData", Path: path}
	b := w.before(req)
	data, st, err := w.conn.Get(path)
	w.after(req, b, Reply{Stat: st, Err: err})
	return data, st, err
}

func (w *wrapped) GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	req := Request{Op: "getData", Path: path, Detail: "watch", Watch: true}
	b := w.before(req)
	data, st, ch, err := w.conn.GetW(path)
	w.after(req, b, Reply{Stat: st, Err: err})
	return data, st, w.events(req, ch), err
}

func (w *wrapped) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	req := Request{Op: "setData", Path: path, Detail: jute.DescribeVersion(version), Write: true}
	b := w.before(req)
	st, err := w.conn.Set(path, data, version)
	w.after(req, b, Reply{Stat: st, Err: err})
	return st, err
}

func (w *wrapped) Children(path string) ([]string, *zk.Stat, error) {
	req := Request{Op: "getChildren", Path: path}
	b := w.before(req)
	names, st, err := w.conn.Children(path)
	w.after(req, b, Reply{Stat: st, Children: names, Err: err})
	return names, st, err
}

func (w *wrapped) ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	req := Request{Op: "getChildren", Path: path, Detail: "watch", Watch: true}
	b := w.before(req)
	names, st, ch, err := w.conn.ChildrenW(path)
	w.after(req, b, Reply{Stat: st, Children: names, Err: err})
	return names, st, w.events(req, ch), err
}

func (w *wrapped) Multi(ops ...any) ([]zk.MultiResponse, error) {
	req := Request{Op: "multi", Detail: fmt.Sprintf("%d ops", len(ops)), Write: true}
	b := w.before(req)
	res, err := w.conn.Multi(ops...)
	w.after(req, b, Reply{Err: err})
	return res, err
}

func (w *wrapped) Sync(path string) (string, error) {
	req := Request{Op: "sync", Path: path}
	b := w.before(req)
	p, err := w.conn.Sync(path)
	w.after(req, b, Reply{Err: err})
	return p, err
}

func (w *wrapped) GetACL(path string) ([]zk.ACL, *zk.Stat, error) {
	req := Request{Op: "getACL", Path: path}
	b := w.before(req)
	acl, st, err := w.conn.GetACL(path)
	w.after(req, b, Reply{Stat: st, Err: err})
	return acl, st, err
}

func (w *wrapped) SetACL(path string, acl []zk.ACL, version int32) (*zk.Stat, error) {
	req := Request{Op: "setACL", Path: path, Detail: jute.DescribeVersion(version), Write: true}
	b := w.before(req)
	st, err := w.conn.SetACL(path, acl, version)
	w.after(req, b, Reply{Stat: st, Err: err})
	return st, err
}

func (w *wrapped) AddAuth(scheme string, auth []byte) error {
	req := Request{Op: "setAuth", Detail: scheme}
	b := w.before(req)
	err := w.conn.AddAuth(scheme, auth)
	w.after(req, b, Reply{Err: err})
	return err
}

func (w *wrapped) Close() {
	req := Request{Op: "close", Write: true}
	b := w.before(req)
	w.conn.Close()
	w.after(req, b, Reply{})
}

func (w *wrapped) SessionID() int64 {
	w.local("SessionID")
	return w.conn.SessionID()
}

func (w *wrapped) State() zk.State {
	w.local("State")
	return w.conn.State()
}

func (w *wrapped) Server() string {
	w.local("Server")
	return w.conn.Server()
}
