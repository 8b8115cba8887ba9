package zkfake

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// The method set of *zk.Conn (go-zookeeper v1.0.4), with its signatures,
// return conventions and error values. Each method checks what
// go-zookeeper checks before it sends (client.go), sends through the
// connection (conn.go), and runs the request on the pure core (state.go).
// CreateProtectedEphemeralSequential, go-zookeeper's own algorithm over
// Create and Children, is in client.go.

// Close closes the session, as (*zk.Conn).Close does: the server deletes
// its ephemeral nodes and fires the watches that triggers; the client
// reports StateDisconnected, ends its own watches with EventNotWatching and
// zk.ErrClosing, and closes its event channel. Calls after Close return
// zk.ErrConnectionClosed. If the client is cut off, the server does not hear
// the close and the session expires after its timeout.
func (c *Conn) Close() {
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.link == linkClosed || c.link == linkCrashed {
		return
	}
	if c.link == linkUp {
		s.endSession(c.session, "closeSession")
	} else if s.conns[c.session] == c {
		s.armExpiry(c.session, c.timeout)
	}
	c.stopTimers()
	c.link = linkClosed
	delete(s.clients, c)
	c.sendEvent(sessionEvent(zk.StateDisconnected, s.cfg.addr))
	c.invalidateWatches(zk.ErrClosing)
	c.closeEvents()
	c.wake()
}

// State returns the current state of the connection.
func (c *Conn) State() zk.State { return zk.State(c.state.Load()) }

// SessionID returns the current session id; 0 between an expiry and the
// next session.
func (c *Conn) SessionID() int64 { return c.sessionID.Load() }

// SessionTimeout returns the session timeout the server granted the
// Conn's last session: what Curator calls the last negotiated session
// timeout, and kazoo the client's session timeout. (go-zookeeper keeps
// it unexported.)
func (c *Conn) SessionTimeout() time.Duration {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	return c.timeout
}

// Server returns the address of the server the client is connected to.
func (c *Conn) Server() string { return c.srv.cfg.addr }

// SetLogger is accepted for compatibility with *zk.Conn; the fake logs
// nothing.
func (c *Conn) SetLogger(zk.Logger) {}

// Create creates a znode and returns its path, which for a sequential node
// carries the server's 10-digit sequence number.
func (c *Conn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if err := checkCreate("create", path, flags); err != nil {
		return "", err
	}
	return c.create("create", createOp{path: path, data: data, acl: acl, flags: flags, ttl: -1}, createSize(path, data, acl))
}

func (c *Conn) create(op string, req createOp, size int) (string, error) {
	var created string
	err := c.exchange(op, req.path, size, func(st *state) error {
		input := func() string { return fmt.Sprintf("flags=%d data=%q", req.flags, req.data) }
		return c.write(st, op, req.path, input, func(ctx writeCtx) (string, zk.Stat, error) {
			ctx.clientChecked = true
			p, stat, err := st.create(ctx, req)
			created = p
			return p, stat, err
		})
	})
	if err != nil {
		return "", err
	}
	return created, nil
}

// CreateContainer creates a container znode, which the server deletes once
// its last child is gone.
func (c *Conn) CreateContainer(path string, data []byte, flag int32, acl []zk.ACL) (string, error) {
	if err := checkCreate("createContainer", path, flag); err != nil {
		return "", err
	}
	return c.create("createContainer", createOp{path: path, data: data, acl: acl, flags: flag, ttl: -1}, createSize(path, data, acl))
}

// CreateTTL creates a TTL znode, which the server deletes once it has had no
// children and no change for ttl.
func (c *Conn) CreateTTL(path string, data []byte, flag int32, acl []zk.ACL, ttl time.Duration) (string, error) {
	if err := checkCreate("createTTL", path, flag); err != nil {
		return "", err
	}
	return c.create("createTTL", createOp{path: path, data: data, acl: acl, flags: flag, ttl: ttl.Milliseconds()}, createSize(path, data, acl)+8)
}

// Delete deletes a znode if its version matches (-1 matches any).
func (c *Conn) Delete(path string, version int32) error {
	if err := checkClientPath(path, false); err != nil {
		return err
	}
	return c.exchange("delete", path, headerSize+stringSize(path)+4, func(st *state) error {
		input := func() string { return fmt.Sprintf("version=%d", version) }
		return c.write(st, "delete", path, input, func(ctx writeCtx) (string, zk.Stat, error) {
			return "", zk.Stat{}, st.delete(ctx, path, version)
		})
	})
}

// Exists tells whether a znode exists. A missing node gives false, a zero
// *zk.Stat and no error.
func (c *Conn) Exists(path string) (bool, *zk.Stat, error) {
	if err := checkClientPath(path, false); err != nil {
		return false, nil, err
	}
	var r read
	err := c.read("exists", path, func(st *state) error {
		var err error
		r, err = st.exists(c.srv.viewOf(c), c.session, path, false)
		c.readOp("exists", path, r.stat, err)
		return err
	})
	if err == zk.ErrConnectionClosed {
		return false, nil, err
	}
	if err == zk.ErrNoNode {
		return false, r.statPtr(), nil
	}
	return true, r.statPtr(), err
}

// ExistsW is Exists that also sets a watch: NodeCreated on a missing node,
// NodeDataChanged or NodeDeleted on an existing one.
func (c *Conn) ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	if err := checkClientPath(path, false); err != nil {
		return false, nil, nil, err
	}
	var r read
	var ech <-chan zk.Event
	err := c.exchange("exists", path, headerSize+stringSize(path)+1, func(st *state) error {
		var err error
		r, err = st.exists(c.srv.viewOf(c), c.session, path, true)
		c.readOp("existsW", path, r.stat, err)
		switch err {
		case nil:
			ech = c.addWatcher(path, watchData)
		case zk.ErrNoNode:
			ech = c.addWatcher(path, watchExist)
		}
		return err
	})
	exists := true
	if err == zk.ErrNoNode {
		exists, err = false, nil
	}
	if err != nil {
		return false, nil, nil, err
	}
	return exists, r.statPtr(), ech, nil
}

// Get returns a znode's data and stat.
func (c *Conn) Get(path string) ([]byte, *zk.Stat, error) {
	if err := checkClientPath(path, false); err != nil {
		return nil, nil, err
	}
	r, err := c.getData(path, false, nil)
	if err == zk.ErrConnectionClosed {
		return nil, nil, err
	}
	return r.data, r.statPtr(), err
}

// GetW is Get that also sets a watch for NodeDataChanged or NodeDeleted.
func (c *Conn) GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	if err := checkClientPath(path, false); err != nil {
		return nil, nil, nil, err
	}
	var ech <-chan zk.Event
	r, err := c.getData(path, true, &ech)
	if err != nil {
		return nil, nil, nil, err
	}
	return r.data, r.statPtr(), ech, nil
}

func (c *Conn) getData(path string, watch bool, ech *<-chan zk.Event) (read, error) {
	var r read
	apply := func(st *state) error {
		var err error
		r, err = st.getData(c.srv.viewOf(c), c.session, path, watch)
		c.readOp("getData", path, r.stat, err)
		if err == nil && watch {
			*ech = c.addWatcher(path, watchData)
		}
		return err
	}
	if !watch {
		return r, c.read("getData", path, apply)
	}
	return r, c.exchange("getData", path, headerSize+stringSize(path)+1, apply)
}

// Set writes a znode's data if its version matches (-1 matches any).
func (c *Conn) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	if err := checkClientPath(path, false); err != nil {
		return nil, err
	}
	var stat zk.Stat
	err := c.exchange("setData", path, headerSize+stringSize(path)+bytesSize(data)+4, func(st *state) error {
		input := func() string { return fmt.Sprintf("version=%d data=%q", version, data) }
		return c.write(st, "setData", path, input, func(ctx writeCtx) (string, zk.Stat, error) {
			var err error
			ctx.clientChecked = true
			stat, err = st.setData(ctx, path, data, version)
			return "", stat, err
		})
	})
	if err == zk.ErrConnectionClosed {
		return nil, err
	}
	return &stat, err
}

// Children returns the names of a znode's children and its stat. The names
// come sorted, or, on a server made WithShuffledChildren, in an order drawn
// from its seed; ZooKeeper promises no order.
func (c *Conn) Children(path string) ([]string, *zk.Stat, error) {
	if err := checkClientPath(path, false); err != nil {
		return nil, nil, err
	}
	r, err := c.getChildren(path, false, nil)
	if err == zk.ErrConnectionClosed {
		return nil, nil, err
	}
	return r.children, r.statPtr(), err
}

// ChildrenW is Children that also sets a watch for NodeChildrenChanged or
// NodeDeleted.
func (c *Conn) ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	if err := checkClientPath(path, false); err != nil {
		return nil, nil, nil, err
	}
	var ech <-chan zk.Event
	r, err := c.getChildren(path, true, &ech)
	if err != nil {
		return nil, nil, nil, err
	}
	return r.children, r.statPtr(), ech, nil
}

func (c *Conn) getChildren(path string, watch bool, ech *<-chan zk.Event) (read, error) {
	var r read
	apply := func(st *state) error {
		var err error
		r, err = st.getChildren(c.srv.viewOf(c), c.session, path, watch)
		c.readOp("getChildren", path, r.stat, err)
		if err == nil && watch {
			*ech = c.addWatcher(path, watchChild)
		}
		return err
	}
	if !watch {
		return r, c.read("getChildren", path, apply)
	}
	return r, c.exchange("getChildren", path, headerSize+stringSize(path)+1, apply)
}

// GetACL returns a znode's ACL and stat.
func (c *Conn) GetACL(path string) ([]zk.ACL, *zk.Stat, error) {
	if err := checkClientPath(path, false); err != nil {
		return nil, nil, err
	}
	var r read
	err := c.read("getACL", path, func(st *state) error {
		var err error
		r, err = st.getACL(c.srv.viewOf(c), c.session, path)
		c.readOp("getACL", path, r.stat, err)
		return err
	})
	if err == zk.ErrConnectionClosed {
		return nil, nil, err
	}
	return r.acl, r.statPtr(), err
}

// SetACL replaces a znode's ACL if its ACL version matches (-1 matches any).
func (c *Conn) SetACL(path string, acl []zk.ACL, version int32) (*zk.Stat, error) {
	if err := checkClientPath(path, false); err != nil {
		return nil, err
	}
	var stat zk.Stat
	err := c.exchange("setACL", path, headerSize+stringSize(path)+aclSize(acl)+4, func(st *state) error {
		input := func() string { return fmt.Sprintf("version=%d acl=%v", version, acl) }
		return c.write(st, "setACL", path, input, func(ctx writeCtx) (string, zk.Stat, error) {
			var err error
			ctx.clientChecked = true
			stat, err = st.setACL(ctx, path, acl, version)
			return "", stat, err
		})
	})
	if err == zk.ErrConnectionClosed {
		return nil, err
	}
	return &stat, err
}

// Sync waits until the server the client reads from has caught up with the
// leader, and returns path.
func (c *Conn) Sync(path string) (string, error) {
	if err := checkClientPath(path, false); err != nil {
		return "", err
	}
	err := c.exchange("sync", path, headerSize+stringSize(path), func(st *state) error {
		c.srv.catchUp(c.srv.memberOf(c), st.zxid)
		c.readOp("sync", path, zk.Stat{}, nil)
		return nil
	})
	if err != nil {
		return "", err
	}
	return path, nil
}

// Multi runs ops — *zk.CreateRequest, *zk.DeleteRequest, *zk.SetDataRequest
// and *zk.CheckVersionRequest — all or nothing, as one transaction. Like
// go-zookeeper it checks no path itself: the server refuses a bad one with
// zk.ErrBadArguments.
func (c *Conn) Multi(ops ...interface{}) ([]zk.MultiResponse, error) {
	size, err := multiSize(ops)
	if err != nil {
		return nil, err
	}
	var mr []zk.MultiResponse
	err = c.exchange("multi", multiPath(firstOf(ops)), size, func(st *state) error {
		return c.write(st, "multi", "", func() string { return describeMulti(ops) }, func(ctx writeCtx) (string, zk.Stat, error) {
			var err error
			mr, err = st.multi(ctx, ops)
			return "", zk.Stat{}, err
		})
	})
	return multiReply(ops, mr, err)
}

// AddAuth adds an identity to the session ("digest" with "user:password").
// Like go-zookeeper, the Conn remembers it and presents it again to every
// new session after an expiry.
func (c *Conn) AddAuth(scheme string, auth []byte) error {
	refused := false
	err := c.exchange("setAuth", "", headerSize+4+stringSize(scheme)+bytesSize(auth), func(st *state) error {
		err := st.addAuth(c.session, scheme, auth)
		c.readOp("setAuth", scheme, zk.Stat{}, err)
		refused = err == zk.ErrAuthFailed
		return err
	})
	if refused {
		// The server closes the connection after refusing an
		// authentication; the client reconnects with its session.
		c.srv.mu.Lock()
		if c.link == linkUp {
			c.bounce()
		}
		c.srv.mu.Unlock()
	}
	if err != nil {
		return err
	}
	c.srv.mu.Lock()
	c.creds = append(c.creds, credential{scheme, cloneBytes(auth)})
	c.srv.mu.Unlock()
	return nil
}

// IncrementalReconfig answers as a ZooKeeper 3.8 server with dynamic
// reconfiguration disabled (its default): zk.ErrReconfigDisabled.
func (c *Conn) IncrementalReconfig(joining, leaving []string, version int64) (*zk.Stat, error) {
	return c.reconfig()
}

// Reconfig answers as a ZooKeeper 3.8 server with dynamic reconfiguration
// disabled (its default): zk.ErrReconfigDisabled.
func (c *Conn) Reconfig(members []string, version int64) (*zk.Stat, error) {
	return c.reconfig()
}

func (c *Conn) reconfig() (*zk.Stat, error) {
	err := c.exchange("reconfig", "", headerSize, func(st *state) error {
		return c.write(st, "reconfig", "", func() string { return "" }, func(writeCtx) (string, zk.Stat, error) {
			return "", zk.Stat{}, zk.ErrReconfigDisabled
		})
	})
	return &zk.Stat{}, err
}

func firstOf(ops []any) any {
	if len(ops) == 0 {
		return nil
	}
	return ops[0]
}

// multiPath is the path an op of a multi names, for the lost-reply rules
// and the log.
func multiPath(op any) string {
	switch op := op.(type) {
	case *zk.CreateRequest:
		return op.Path
	case *zk.SetDataRequest:
		return op.Path
	case *zk.DeleteRequest:
		return op.Path
	case *zk.CheckVersionRequest:
		return op.Path
	}
	return ""
}

// describeMulti renders a multi's ops for the log.
func describeMulti(ops []any) string {
	desc := make([]string, len(ops))
	for i, op := range ops {
		switch op := op.(type) {
		case *zk.CreateRequest:
			desc[i] = fmt.Sprintf("create %s flags=%d", op.Path, op.Flags)
		case *zk.SetDataRequest:
			desc[i] = fmt.Sprintf("setData %s version=%d", op.Path, op.Version)
		case *zk.DeleteRequest:
			desc[i] = fmt.Sprintf("delete %s version=%d", op.Path, op.Version)
		case *zk.CheckVersionRequest:
			desc[i] = fmt.Sprintf("check %s version=%d", op.Path, op.Version)
		}
	}
	return strings.Join(desc, "; ")
}

// statPtr returns a fresh copy of the read's stat for the caller, so that
// the read itself can stay on the stack.
func (r *read) statPtr() *zk.Stat {
	st := r.stat
	return &st
}
