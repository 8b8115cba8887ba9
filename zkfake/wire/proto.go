package wire

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/jute"
)

// opAbbreviation is how the real server names an op in cons's lop field
// (FinalRequestProcessor's lastOp).
func opAbbreviation(op int32) string {
	switch op {
	case jute.OpPing:
		return "PING"
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		return "CREA"
	case jute.OpDelete:
		return "DELE"
	case jute.OpExists:
		return "EXIS"
	case jute.OpGetData:
		return "GETD"
	case jute.OpSetData:
		return "SETD"
	case jute.OpGetACL:
		return "GETA"
	case jute.OpSetACL:
		return "SETA"
	case jute.OpGetChildren, jute.OpGetChildren2:
		return "GETC"
	case jute.OpSync:
		return "SYNC"
	case jute.OpCheck:
		return "CHEC"
	case jute.OpMulti:
		return "MULT"
	case jute.OpReconfig:
		return "RECO"
	case jute.OpSetAuth:
		return "AUTH"
	case jute.OpSetWatches:
		return "SETW"
	case jute.OpSetWatches2:
		return "STW2"
	case jute.OpAddWatch:
		return "ADDW"
	case jute.OpCheckWatches:
		return "CHKW"
	case jute.OpRemoveWatches:
		return "REMW"
	case jute.OpMultiRead:
		return "MLTR"
	case jute.OpGetEphemerals:
		return "GETE"
	case jute.OpGetAllChildrenNumber:
		return "GETACN"
	case jute.OpWhoAmI:
		return "HOMI"
	}
	return "NA"
}

// errorCodes maps go-zookeeper's error values, which the fake returns, back
// to the codes the server sends.
var errorCodes = map[error]int32{
	zk.ErrAPIError:                jute.CodeAPIError,
	zk.ErrNoNode:                  jute.CodeNoNode,
	zk.ErrNoAuth:                  jute.CodeNoAuth,
	zk.ErrBadVersion:              jute.CodeBadVersion,
	zk.ErrNoChildrenForEphemerals: jute.CodeNoChildrenForEphem,
	zk.ErrNodeExists:              jute.CodeNodeExists,
	zk.ErrNotEmpty:                jute.CodeNotEmpty,
	zk.ErrSessionExpired:          jute.CodeSessionExpired,
	zk.ErrInvalidACL:              jute.CodeInvalidACL,
	zk.ErrAuthFailed:              jute.CodeAuthFailed,
	zk.ErrSessionMoved:            jute.CodeSessionMoved,
	zk.ErrReconfigDisabled:        jute.CodeReconfigDisabled,
	zk.ErrBadArguments:            jute.CodeBadArguments,
	zkfake.ErrNoWatcher:           jute.CodeNoWatcher,
	// The fake checks paths as the go-zookeeper client does; the server
	// refuses a bad one with ZBADARGUMENTS.
	zk.ErrInvalidPath: jute.CodeBadArguments,
}

// errorCode returns the wire code for an error the fake returned. Codes
// go-zookeeper has no value for reach it as "unknown error: N", which the
// fake reproduces; those are parsed back.
func errorCode(err error) int32 {
	if err == nil {
		return jute.CodeOK
	}
	if c, ok := errorCodes[err]; ok {
		return c
	}
	for e, c := range errorCodes {
		if errors.Is(err, e) {
			return c
		}
	}
	var n int32
	if _, scanErr := fmt.Sscanf(err.Error(), "unknown error: %d", &n); scanErr == nil {
		return n
	}
	return jute.CodeSystemError
}

// request is one decoded client request. Only the fields its op uses are set.
type request struct {
	// reply, if set, is filled with what the request returned, for a
	// gate's After hook.
	reply *Reply

	xid     int32
	op      int32
	path    string
	data    []byte
	acl     []zk.ACL
	flags   int32
	ttl     int64
	version int32
	watch   bool

	// multi and multiRead; badOps is a multiRead the server cannot decode
	ops    []any
	badOps bool

	// addWatch's mode, checkWatches' and removeWatches' watcher type
	mode int32

	// setAuth
	scheme string
	auth   []byte

	// sasl: the client's token, nil if it sent a null buffer
	token []byte

	// setWatches and setWatches2
	relativeZxid                          int64
	dataWatches, existWatches, childWatch []string
	persistentWatches, recursiveWatches   []string
}

// decodeRequest decodes a request frame (without its length prefix). It
// fails only on frames the real server cannot deserialize either, which
// close the connection; an op code it does not know decodes fine and is
// answered with ZUNIMPLEMENTED.
func decodeRequest(frame []byte) (*request, error) {
	r := jute.NewReader(frame)
	req := &request{xid: r.Int32(), op: r.Int32()}
	if r.Err() != nil {
		return nil, r.Err()
	}
	switch req.op {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		req.path, req.data, req.acl, req.flags = r.String(), r.Buffer(), r.ACLs(), r.Int32()
		if req.op == jute.OpCreateTTL {
			req.ttl = r.Int64()
		}
	case jute.OpDelete, jute.OpCheck:
		req.path, req.version = r.String(), r.Int32()
	case jute.OpExists, jute.OpGetData, jute.OpGetChildren, jute.OpGetChildren2:
		req.path, req.watch = r.String(), r.Bool()
	case jute.OpSetData:
		req.path, req.data, req.version = r.String(), r.Buffer(), r.Int32()
	case jute.OpGetACL, jute.OpSync, jute.OpGetEphemerals, jute.OpGetAllChildrenNumber:
		req.path = r.String()
	case jute.OpAddWatch, jute.OpCheckWatches, jute.OpRemoveWatches:
		req.path, req.mode = r.String(), r.Int32()
	case jute.OpMultiRead:
		var ok bool
		req.ops, ok = decodeOps(r)
		req.badOps = !ok
	case jute.OpSetACL:
		req.path, req.acl, req.version = r.String(), r.ACLs(), r.Int32()
	case jute.OpMulti:
		req.ops = decodeMulti(r)
	case jute.OpSetAuth:
		r.Int32() // type, unused by the server
		req.scheme, req.auth = r.String(), r.Buffer()
	case jute.OpSetWatches, jute.OpSetWatches2:
		req.relativeZxid = r.Int64()
		req.dataWatches, req.existWatches, req.childWatch = r.Strings(), r.Strings(), r.Strings()
		if req.op == jute.OpSetWatches2 {
			req.persistentWatches, req.recursiveWatches = r.Strings(), r.Strings()
		}
	case jute.OpSASL:
		req.token = r.Buffer()
	case jute.OpReconfig:
		r.Buffer()
		r.Buffer()
		r.Buffer()
		r.Int64()
	}
	if r.Err() != nil {
		return nil, r.Err()
	}
	return req, nil
}

// decodeMulti reads a multi's ops. The fake's multi takes creates (not
// createTTL, whose TTL its requests cannot carry), deletes, setData and
// checks; any other op fails the frame, which closes the connection.
func decodeMulti(r *jute.Reader) []any {
	ops, ok := decodeOps(r)
	for _, op := range ops {
		switch op.(type) {
		case *zk.CreateTTLRequest, *zkfake.GetDataRequest, *zkfake.GetChildrenRequest:
			ok = false
		}
	}
	if !ok {
		r.Fail()
	}
	return ops
}

// decodeOps reads the ops of a multi or a multiRead up to the header marked
// done, as the server's MultiOperationRecord does: writes as go-zookeeper's
// request types, reads as zkfake's. It reports false, having stopped
// there, at an op code no multi holds or at a read among writes (or a write
// among reads): a record the server cannot build. A read's watch flag is
// read and dropped, as the server drops it.
func decodeOps(r *jute.Reader) (ops []any, ok bool) {
	reads, writes := 0, 0
	for r.Err() == nil {
		typ, done := r.Int32(), r.Bool()
		r.Int32() // err, unused in requests
		if done || r.Err() != nil {
			break
		}
		switch typ {
		case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer:
			op := &zk.CreateRequest{Path: r.String(), Data: r.Buffer(), Acl: r.ACLs(), Flags: r.Int32()}
			if typ == jute.OpCreateContainer {
				op.Flags = zk.FlagContainer
			}
			ops = append(ops, op)
		case jute.OpCreateTTL:
			ops = append(ops, &zk.CreateTTLRequest{Path: r.String(), Data: r.Buffer(), Acl: r.ACLs(), Flags: r.Int32(), Ttl: r.Int64()})
		case jute.OpDelete:
			ops = append(ops, &zk.DeleteRequest{Path: r.String(), Version: r.Int32()})
		case jute.OpSetData:
			ops = append(ops, &zk.SetDataRequest{Path: r.String(), Data: r.Buffer(), Version: r.Int32()})
		case jute.OpCheck:
			ops = append(ops, &zk.CheckVersionRequest{Path: r.String(), Version: r.Int32()})
		case jute.OpGetData:
			ops = append(ops, &zkfake.GetDataRequest{Path: r.String()})
			r.Bool()
		case jute.OpGetChildren:
			ops = append(ops, &zkfake.GetChildrenRequest{Path: r.String()})
			r.Bool()
		default:
			return ops, false
		}
		if typ == jute.OpGetData || typ == jute.OpGetChildren {
			reads++
		} else {
			writes++
		}
		if reads > 0 && writes > 0 {
			return ops, false
		}
	}
	return ops, true
}

// connectRequest is the first frame a client sends.
type connectRequest struct {
	protocolVersion int32
	lastZxidSeen    int64
	timeout         int32
	sessionID       int64
	passwd          []byte
	readOnly        bool
	// hasReadOnly tells whether the client sent the readOnly flag (the Java
	// client does, go-zookeeper does not); the server answers in kind.
	hasReadOnly bool
}

func decodeConnect(frame []byte) (*connectRequest, error) {
	r := jute.NewReader(frame)
	c := &connectRequest{
		protocolVersion: r.Int32(),
		lastZxidSeen:    r.Int64(),
		timeout:         r.Int32(),
		sessionID:       r.Int64(),
		passwd:          r.Buffer(),
	}
	if r.Err() == nil && r.Len() > 0 {
		c.readOnly, c.hasReadOnly = r.Bool(), true
	}
	if r.Err() != nil {
		return nil, r.Err()
	}
	return c, nil
}

// encodeConnectResponse answers a connect request. The trailing readOnly
// flag goes only to a client that sent one, as the real server does.
func encodeConnectResponse(timeout int32, sessionID int64, passwd []byte, withReadOnly bool) []byte {
	w := &jute.Writer{}
	w.Int32(0)
	w.Int32(timeout)
	w.Int64(sessionID)
	w.Buffer(passwd)
	if withReadOnly {
		w.Bool(false)
	}
	return w.Bytes()
}

// replyHeader starts a reply frame's body.
func replyHeader(xid int32, zxid int64, code int32) *jute.Writer {
	w := &jute.Writer{}
	w.Int32(xid)
	w.Int64(zxid)
	w.Int32(code)
	return w
}
