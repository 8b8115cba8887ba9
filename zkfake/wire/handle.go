package wire

import (
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/jute"
)

// connectionErrors are the fake client's own failures: the session cannot
// answer, so the connection is dropped and the client reconnects (and finds
// out whether its session survived).
func isConnectionError(err error) bool {
	switch err {
	case zk.ErrConnectionClosed, zk.ErrNoServer, zk.ErrClosing, zk.ErrSessionExpired:
		return true
	}
	return false
}

// handle answers one request on cc. It returns false when the connection
// must close.
func (s *session) handle(cc *clientConn, req *request) bool {
	if req.op == jute.OpPing {
		zxid := s.l.srv.Zxid()
		cc.send(replyHeader(jute.XidPing, zxid, jute.CodeOK).Bytes())
		cc.answered(jute.OpPing, jute.XidPing, zxid)
		return true
	}
	if !s.alive() {
		return false
	}
	conn := s.conn
	var (
		body = &jute.Writer{}
		err  error
	)
	switch req.op {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		var path string
		switch req.op {
		case jute.OpCreateContainer:
			path, err = conn.CreateContainer(req.path, req.data, req.flags, req.acl)
		case jute.OpCreateTTL:
			path, err = conn.CreateTTL(req.path, req.data, req.flags, req.acl, time.Duration(req.ttl)*time.Millisecond)
		default:
			path, err = conn.Create(req.path, req.data, req.flags, req.acl)
		}
		body.String(path)
		if req.op != jute.OpCreate && err == nil {
			// The fake's Create returns no stat; a create2-style reply
			// carries the new node's, read right after.
			_, stat, _ := conn.Exists(path)
			body.Stat(stat)
		}
	case jute.OpDelete:
		err = conn.Delete(req.path, req.version)
	case jute.OpExists:
		var ok bool
		var stat *zk.Stat
		if req.watch {
			ok, stat, _, err = conn.ExistsW(req.path)
			if err == nil {
				s.register(req.path, watchExist)
			}
		} else {
			ok, stat, err = conn.Exists(req.path)
		}
		if err == nil && !ok {
			err = zk.ErrNoNode
		}
		body.Stat(stat)
	case jute.OpGetData:
		var data []byte
		var stat *zk.Stat
		if req.watch {
			data, stat, _, err = conn.GetW(req.path)
			if err == nil {
				s.register(req.path, watchData)
			}
		} else {
			data, stat, err = conn.Get(req.path)
		}
		body.Buffer(data)
		body.Stat(stat)
	case jute.OpSetData:
		var stat *zk.Stat
		stat, err = conn.Set(req.path, req.data, req.version)
		body.Stat(stat)
	case jute.OpGetACL:
		var acl []zk.ACL
		var stat *zk.Stat
		acl, stat, err = conn.GetACL(req.path)
		body.ACLs(acl)
		body.Stat(stat)
	case jute.OpSetACL:
		var stat *zk.Stat
		stat, err = conn.SetACL(req.path, req.acl, req.version)
		body.Stat(stat)
	case jute.OpGetChildren, jute.OpGetChildren2:
		var children []string
		var stat *zk.Stat
		if req.watch {
			children, stat, _, err = conn.ChildrenW(req.path)
			if err == nil {
				s.register(req.path, watchChild)
			}
		} else {
			children, stat, err = conn.Children(req.path)
		}
		body.Strings(children)
		if req.op == jute.OpGetChildren2 {
			body.Stat(stat)
		}
	case jute.OpSync:
		var path string
		path, err = conn.Sync(req.path)
		body.String(path)
	case jute.OpMulti:
		body, err = s.multi(req.ops)
	case jute.OpReconfig:
		_, err = conn.Reconfig(nil, -1)
	case jute.OpSetAuth:
		err = conn.AddAuth(req.scheme, req.auth)
		if err == zk.ErrAuthFailed {
			// The real server answers AUTHFAILED and closes the connection.
			cc.sendAndClose(replyHeader(req.xid, s.l.srv.Zxid(), jute.CodeAuthFailed).Bytes())
			return false
		}
	case jute.OpSetWatches, jute.OpSetWatches2:
		s.setWatches(cc, req) // sends its own reply, after the events
		return true
	case jute.OpClose:
		// Closing fires the watches on the session's own ephemerals; their
		// notifications go out on cc before the reply, so cc is detached
		// only afterwards, and not closed by end.
		conn.Close()
		s.detach(cc)
		s.end(false)
		cc.sendAndClose(replyHeader(req.xid, s.l.srv.Zxid(), jute.CodeOK).Bytes())
		return false
	default:
		// As the real server does with an op it does not know: answer
		// ZUNIMPLEMENTED with zxid -1, then close the connection.
		cc.sendAndClose(replyHeader(req.xid, -1, jute.CodeUnimplemented).Bytes())
		return false
	}
	if isConnectionError(err) {
		return false
	}
	code := errorCode(err)
	zxid := s.l.srv.Zxid()
	w := replyHeader(req.xid, zxid, code)
	if code == jute.CodeOK {
		w.Append(body.Bytes())
	}
	cc.send(w.Bytes())
	cc.answered(req.op, req.xid, zxid)
	return true
}

// multi runs a transaction and encodes its results. A failed transaction is
// answered with no error in the header and an error result per op (OK
// before the failing one, its code, then RUNTIMEINCONSISTENCY), as the real
// server answers; an error with no results goes in the header.
func (s *session) multi(ops []any) (*jute.Writer, error) {
	results, err := s.conn.Multi(ops...)
	body := &jute.Writer{}
	header := func(typ, code int32) {
		body.Int32(typ)
		body.Bool(false)
		body.Int32(code)
	}
	container := -1
	if err == zk.ErrAPIError && len(results) < len(ops) {
		// The fake applies a multi with a container create but answers as
		// go-zookeeper does, which cannot decode the create2-typed result
		// the server sends for it: send that result.
		if op, ok := ops[len(results)].(*zk.CreateRequest); ok && op.Flags == zk.FlagContainer {
			container, err = len(results), nil
		}
	}
	if err != nil && len(results) == 0 {
		return nil, err
	}
	for i, op := range ops {
		if err != nil {
			code := jute.CodeOK
			if i < len(results) {
				code = int(errorCode(results[i].Error))
			}
			header(jute.OpError, int32(code))
			body.Int32(int32(code))
			continue
		}
		var res zk.MultiResponse
		if i < len(results) {
			res = results[i]
		}
		switch op := op.(type) {
		case *zk.CreateRequest:
			if container >= 0 && i >= container {
				path := res.String
				if path == "" {
					path = op.Path
				}
				_, stat, _ := s.conn.Exists(path)
				header(jute.OpCreate2, jute.CodeOK)
				body.String(path)
				body.Stat(stat)
			} else {
				header(jute.OpCreate, jute.CodeOK)
				body.String(res.String)
			}
		case *zk.DeleteRequest:
			header(jute.OpDelete, jute.CodeOK)
		case *zk.SetDataRequest:
			header(jute.OpSetData, jute.CodeOK)
			body.Stat(res.Stat)
		case *zk.CheckVersionRequest:
			header(jute.OpCheck, jute.CodeOK)
		}
	}
	body.Int32(-1)
	body.Bool(true)
	body.Int32(-1)
	return body, nil
}

// setWatches re-arms, after a reconnect, the watches the client still holds.
// Those the fake still holds for the session need nothing; any other is
// checked against the client's last zxid, firing at once if the node changed
// since (as the real server does), and set otherwise.
func (s *session) setWatches(cc *clientConn, req *request) {
	conn := s.conn
	rel := req.relativeZxid
	fire := func(t zk.EventType, path string) { cc.send(notification(t, path)) }
	for _, p := range req.dataWatches {
		if s.holds(p, watchData) {
			continue
		}
		ok, stat, err := conn.Exists(p)
		switch {
		case err != nil:
		case !ok:
			fire(zk.EventNodeDeleted, p)
		case stat.Mzxid > rel:
			fire(zk.EventNodeDataChanged, p)
		default:
			if _, _, _, err := conn.GetW(p); err == nil {
				s.register(p, watchData)
			}
		}
	}
	for _, p := range req.existWatches {
		if s.holds(p, watchExist) {
			continue
		}
		// The server fires NodeCreated for an exist watch whose node is
		// there, whatever its zxids (DataTree.setWatches).
		ok, _, err := conn.Exists(p)
		switch {
		case err != nil:
		case ok:
			fire(zk.EventNodeCreated, p)
		default:
			if _, _, _, err := conn.ExistsW(p); err == nil {
				s.register(p, watchExist)
			}
		}
	}
	for _, p := range req.childWatch {
		if s.holds(p, watchChild) {
			continue
		}
		ok, stat, err := conn.Exists(p)
		switch {
		case err != nil:
		case !ok:
			fire(zk.EventNodeDeleted, p)
		case stat.Pzxid > rel:
			fire(zk.EventNodeChildrenChanged, p)
		default:
			if _, _, _, err := conn.ChildrenW(p); err == nil {
				s.register(p, watchChild)
			}
		}
	}
	cc.send(replyHeader(req.xid, s.l.srv.Zxid(), jute.CodeOK).Bytes())
}
