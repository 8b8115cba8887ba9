package wire

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/jute"
)

// errMarshalling is ZooKeeper's MarshallingError as the fake spells the
// codes go-zookeeper has no value for.
var errMarshalling = fmt.Errorf("unknown error: %d", jute.CodeMarshallingError)

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
		if s.isDown() {
			// No member serves the session now (see onEvent).
			return false
		}
		zxid := s.l.srv.Zxid()
		cc.send(replyHeader(jute.XidPing, zxid, jute.CodeOK).Bytes())
		cc.answered(jute.OpPing, jute.XidPing, zxid)
		return true
	}
	if !s.alive() {
		return false
	}
	s.take()
	defer s.replied()
	conn := s.conn
	var (
		body = &jute.Writer{}
		err  error
		// bodyOnError: the reply carries its body with an error code,
		// as a multiRead of writes does.
		bodyOnError bool
	)
	if req.path == "" && rootAlias[req.op] {
		// The server keeps the root under "" too (DataTree), and answers
		// a read of "" as one of "/". (A watch it sets is set on "/".)
		req.path = "/"
	}
	switch req.op {
	case jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		// The server takes the mode from the flags, whatever the op: a
		// createContainer of a persistent node makes one. Each answers
		// with the node's stat, from the same transaction
		// (Create2Response).
		if err = createModeError(req); err != nil {
			break
		}
		var path string
		var stat *zk.Stat
		path, stat, err = conn.Create2(req.path, req.data, req.flags, req.acl, ttlDuration(req.ttl))
		req.tell(Reply{Path: path, Stat: stat})
		body.String(path)
		body.Stat(stat)
	case jute.OpCreate:
		if err = createModeError(req); err != nil {
			break
		}
		var path string
		path, err = conn.Create(req.path, req.data, req.flags, req.acl)
		if errors.Is(err, zk.ErrInvalidPath) {
			// A path go-zookeeper would not have sent: Create2 judges it
			// as the server does ("/a//b" finds no parent).
			path, _, err = conn.Create2(req.path, req.data, req.flags, req.acl, ttlDuration(-1))
		}
		req.tell(Reply{Path: path})
		body.String(path)
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
		req.tell(Reply{Exists: ok, Stat: stat})
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
		req.tell(Reply{Stat: stat})
		body.Buffer(data)
		body.Stat(stat)
	case jute.OpSetData:
		var stat *zk.Stat
		stat, err = conn.Set(req.path, req.data, req.version)
		req.tell(Reply{Stat: stat})
		body.Stat(stat)
	case jute.OpGetACL:
		var acl []zk.ACL
		var stat *zk.Stat
		acl, stat, err = conn.GetACL(req.path)
		req.tell(Reply{Stat: stat})
		body.ACLs(acl)
		body.Stat(stat)
	case jute.OpSetACL:
		var stat *zk.Stat
		stat, err = conn.SetACL(req.path, req.acl, req.version)
		req.tell(Reply{Stat: stat})
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
		req.tell(Reply{Stat: stat, Children: children})
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
	case jute.OpSASL:
		return s.handleSASL(cc, req)
	case jute.OpAddWatch:
		var ch <-chan zk.Event
		ch, err = conn.AddWatch(req.path, zkfake.AddWatchMode(req.mode))
		if err == nil {
			kind := watchPersistent
			if req.mode == jute.AddWatchPersistentRecursive {
				kind = watchPersistentRecursive
			}
			s.register(req.path, kind)
			go drain(ch)
			// The server answers addWatch with an ErrorResponse of 0.
			body.Int32(0)
		}
	case jute.OpCheckWatches:
		err = conn.CheckWatches(req.path, zkfake.WatcherType(req.mode))
	case jute.OpRemoveWatches:
		err = conn.RemoveWatches(req.path, zkfake.WatcherType(req.mode))
		if err == nil {
			s.unregister(req.path, req.mode)
		}
	case jute.OpGetEphemerals:
		var paths []string
		paths, err = conn.GetEphemerals(req.path)
		body.Strings(paths)
	case jute.OpGetAllChildrenNumber:
		var n int32
		n, err = conn.GetAllChildrenNumber(req.path)
		body.Int32(n)
	case jute.OpWhoAmI:
		var ids []zkfake.ClientInfo
		ids, err = conn.WhoAmI()
		body.Int32(int32(len(ids)))
		for _, id := range ids {
			body.String(id.Scheme)
			body.String(id.User)
		}
	case jute.OpMultiRead:
		body, err = s.multiRead(req)
		bodyOnError = err != nil && body != nil
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
	if errors.Is(err, zk.ErrInvalidPath) {
		// A path go-zookeeper would not have sent, from another client.
		err = uncheckedPathError(req)
		if err == nil {
			body = &jute.Writer{}
			body.String(req.path) // sync echoes it
		}
	}
	if req.reply != nil {
		if req.op != jute.OpExists || err != zk.ErrNoNode {
			req.reply.Err = err
		}
	}
	if isConnectionError(err) {
		return false
	}
	code := errorCode(err)
	zxid := s.l.srv.Zxid()
	w := replyHeader(req.xid, zxid, code)
	if code == jute.CodeOK || bodyOnError {
		w.Append(body.Bytes())
	}
	cc.send(w.Bytes())
	cc.answered(req.op, req.xid, zxid)
	return true
}

// tell fills the request's reply, if a gate asked for it, with what the
// call returned besides its error.
func (req *request) tell(r Reply) {
	if req.reply != nil {
		*req.reply = r
	}
}

// multi runs a transaction and encodes its results. A failed transaction is
// answered with no error in the header and an error result per op (OK
// before the failing one, its code, then RUNTIMEINCONSISTENCY), as the real
// server answers; an error with no results goes in the header.
func (s *session) multi(ops []any) (*jute.Writer, error) {
	results, err := s.conn.Multi(ops...)
	body := &jute.Writer{}
	header := func(typ, code int32) { writeMultiHeader(body, typ, code) }
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
	writeMultiEnd(body)
	return body, nil
}

// rootAlias are the reads the server answers for "" as for "/".
// (getAllChildrenNumber of "" counts every node: the fake's own answer.)
var rootAlias = map[int32]bool{
	jute.OpExists: true, jute.OpGetData: true, jute.OpGetChildren: true, jute.OpGetChildren2: true, jute.OpGetACL: true,
}

// uncheckedPathError is what ZooKeeper 3.8 answers a request whose path
// go-zookeeper refuses on its side (the fake's calls answer
// zk.ErrInvalidPath for it), when another client sends it: the server
// validates the path of a write (setData, setACL: BadArguments), refuses a
// delete's path only without a '/' or with a NUL, an exists' only with a
// NUL, and otherwise finds no node there; a sync echoes any path. (Checked
// with a raw client against a 3.8.0 ensemble.)
func uncheckedPathError(req *request) error {
	nul := strings.Contains(req.path, "\x00")
	switch req.op {
	case jute.OpSync:
		return nil
	case jute.OpExists:
		if nul {
			return zk.ErrBadArguments
		}
		return zk.ErrNoNode
	case jute.OpGetData, jute.OpGetChildren, jute.OpGetChildren2, jute.OpGetACL, jute.OpGetAllChildrenNumber:
		return zk.ErrNoNode
	case jute.OpDelete:
		if nul || !strings.Contains(req.path, "/") {
			return zk.ErrBadArguments
		}
		return zk.ErrNoNode
	}
	return zk.ErrBadArguments
}

// createModeError is what the server answers a create request whose flags
// or TTL it refuses, before it looks at the path (PrepRequestProcessor:
// CreateMode.fromFlag, then EphemeralType.validateTTL, against the TTL a
// createTTL carries and -1 for the other creates): BadArguments for flags
// that name no mode, for a TTL mode without a TTL from 1 ms to 2^40-1 ms,
// and for a createTTL of another mode. nil if it takes them. (The fake's
// own calls make go-zookeeper's checks of the flags instead, on the
// client's side.)
//
// A createTTL of another mode with a TTL below zero passes the server's
// check, and ZooKeeper 3.8.0 then fails to apply the transaction it
// logged (DataTree: "ttl must be positive"): the members that apply it
// exit, and fail again on restart as they replay it. The fake answers
// BadArguments, as the server does with a TTL of zero or more.
func createModeError(req *request) error {
	ttl := int64(-1)
	if req.op == jute.OpCreateTTL {
		ttl = req.ttl
	}
	switch req.flags {
	case zk.FlagTTL, zk.FlagPersistentSequentialWithTTL:
		if ttl <= 0 || ttl > 1<<40-1 {
			return zk.ErrBadArguments
		}
	case zk.FlagPersistent, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeralSequential, zk.FlagContainer:
		if req.op == jute.OpCreateTTL {
			return zk.ErrBadArguments
		}
	default:
		return zk.ErrBadArguments
	}
	return nil
}

// ttlDuration turns a request's TTL in milliseconds into a Duration,
// keeping one too large to convert too large, and so refused.
func ttlDuration(ms int64) time.Duration {
	const limit = 1 << 41 // twice ZooKeeper's largest TTL
	if ms > limit {
		ms = limit
	}
	return time.Duration(ms) * time.Millisecond
}

// drain reads a persistent watch's channel until it closes: the wire
// client hears the watch's events through the session's callback, and the
// channel's goroutine ends with the watch.
func drain(ch <-chan zk.Event) {
	for range ch {
	}
}

// multiRead answers a multiRead. A request the server cannot decode — an op
// code no multi knows, or reads mixed with writes — fails with
// MarshallingError and no results; a request of write ops only the server
// decodes and then refuses: MarshallingError with an empty MultiResponse.
func (s *session) multiRead(req *request) (*jute.Writer, error) {
	empty := &jute.Writer{}
	writeMultiEnd(empty)
	if req.badOps {
		return nil, errMarshalling
	}
	results, err := s.conn.MultiRead(req.ops...)
	if err != nil {
		if errorCode(err) == jute.CodeMarshallingError {
			return empty, err
		}
		return nil, err
	}
	body := &jute.Writer{}
	for _, res := range results {
		switch {
		case res.Error != nil:
			code := errorCode(res.Error)
			writeMultiHeader(body, jute.OpError, code)
			body.Int32(code)
		case res.Stat != nil:
			writeMultiHeader(body, jute.OpGetData, jute.CodeOK)
			body.Buffer(res.Data)
			body.Stat(res.Stat)
		default:
			writeMultiHeader(body, jute.OpGetChildren, jute.CodeOK)
			body.Strings(res.Children)
		}
	}
	writeMultiEnd(body)
	return body, nil
}

// writeMultiHeader writes the MultiHeader before one result of a multi.
func writeMultiHeader(w *jute.Writer, typ, code int32) {
	w.Int32(typ)
	w.Bool(false)
	w.Int32(code)
}

// writeMultiEnd writes the MultiHeader that ends a multi's results.
func writeMultiEnd(w *jute.Writer) {
	w.Int32(-1)
	w.Bool(true)
	w.Int32(-1)
}

// setWatches re-arms, after a reconnect, the watches the client still holds.
// Those the fake still holds for the session need nothing; any other
// one-shot watch is checked against the client's last zxid, firing at once
// if the node changed since (as the real server does), and set otherwise.
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
	// Persistent watches are set again and fire nothing, as on the real
	// server (DataTree.setWatches): the client hears nothing of what
	// changed while it was away.
	for _, list := range []struct {
		paths []string
		kind  watchKind
		mode  zkfake.AddWatchMode
	}{
		{req.persistentWatches, watchPersistent, zkfake.AddWatchModePersistent},
		{req.recursiveWatches, watchPersistentRecursive, zkfake.AddWatchModePersistentRecursive},
	} {
		for _, p := range list.paths {
			if s.holds(p, list.kind) {
				continue
			}
			if ch, err := conn.AddWatch(p, list.mode); err == nil {
				s.register(p, list.kind)
				go drain(ch)
			}
		}
	}
	cc.send(replyHeader(req.xid, s.l.srv.Zxid(), jute.CodeOK).Bytes())
}
