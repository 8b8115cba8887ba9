package wire

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// Op codes of ZooKeeper's client protocol (ZooDefs.OpCode).
const (
	opNotify          = 0
	opCreate          = 1
	opDelete          = 2
	opExists          = 3
	opGetData         = 4
	opSetData         = 5
	opGetACL          = 6
	opSetACL          = 7
	opGetChildren     = 8
	opSync            = 9
	opPing            = 11
	opGetChildren2    = 12
	opCheck           = 13
	opMulti           = 14
	opCreate2         = 15
	opReconfig        = 16
	opCreateContainer = 19
	opCreateTTL       = 21
	opClose           = -11
	opSetAuth         = 100
	opSetWatches      = 101
	opSetWatches2     = 105
	opError           = -1
)

// opAbbreviation is how the real server names an op in cons's lop field
// (FinalRequestProcessor's lastOp).
func opAbbreviation(op int32) string {
	switch op {
	case opPing:
		return "PING"
	case opCreate, opCreate2, opCreateContainer, opCreateTTL:
		return "CREA"
	case opDelete:
		return "DELE"
	case opExists:
		return "EXIS"
	case opGetData:
		return "GETD"
	case opSetData:
		return "SETD"
	case opGetACL:
		return "GETA"
	case opSetACL:
		return "SETA"
	case opGetChildren, opGetChildren2:
		return "GETC"
	case opSync:
		return "SYNC"
	case opCheck:
		return "CHEC"
	case opMulti:
		return "MULT"
	case opReconfig:
		return "RECO"
	case opSetAuth:
		return "AUTH"
	case opSetWatches:
		return "SETW"
	case opSetWatches2:
		return "STW2"
	}
	return "NA"
}

// Reserved xids: notifications carry -1, pings -2, auth -4, setWatches -8.
const (
	xidNotification = -1
	xidPing         = -2
)

// Error codes of ZooKeeper's KeeperException.Code.
const (
	codeOK                  = 0
	codeSystemError         = -1
	codeRuntimeInconsistent = -2
	codeMarshallingError    = -5
	codeUnimplemented       = -6
	codeBadArguments        = -8
	codeAPIError            = -100
	codeNoNode              = -101
	codeNoAuth              = -102
	codeBadVersion          = -103
	codeNoChildrenForEphem  = -108
	codeNodeExists          = -110
	codeNotEmpty            = -111
	codeSessionExpired      = -112
	codeInvalidACL          = -114
	codeAuthFailed          = -115
	codeSessionMoved        = -118
	codeReconfigDisabled    = -123
)

// errorCodes maps go-zookeeper's error values, which the fake returns, back
// to the codes the server sends.
var errorCodes = map[error]int32{
	zk.ErrAPIError:                codeAPIError,
	zk.ErrNoNode:                  codeNoNode,
	zk.ErrNoAuth:                  codeNoAuth,
	zk.ErrBadVersion:              codeBadVersion,
	zk.ErrNoChildrenForEphemerals: codeNoChildrenForEphem,
	zk.ErrNodeExists:              codeNodeExists,
	zk.ErrNotEmpty:                codeNotEmpty,
	zk.ErrSessionExpired:          codeSessionExpired,
	zk.ErrInvalidACL:              codeInvalidACL,
	zk.ErrAuthFailed:              codeAuthFailed,
	zk.ErrSessionMoved:            codeSessionMoved,
	zk.ErrReconfigDisabled:        codeReconfigDisabled,
	zk.ErrBadArguments:            codeBadArguments,
	// The fake checks paths as the go-zookeeper client does; the server
	// refuses a bad one with ZBADARGUMENTS.
	zk.ErrInvalidPath: codeBadArguments,
}

// errorCode returns the wire code for an error the fake returned. Codes
// go-zookeeper has no value for reach it as "unknown error: N", which the
// fake reproduces; those are parsed back.
func errorCode(err error) int32 {
	if err == nil {
		return codeOK
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
	return codeSystemError
}

// request is one decoded client request. Only the fields its op uses are set.
type request struct {
	xid     int32
	op      int32
	path    string
	data    []byte
	acl     []zk.ACL
	flags   int32
	ttl     int64
	version int32
	watch   bool

	// multi
	ops []any

	// setAuth
	scheme string
	auth   []byte

	// setWatches and setWatches2
	relativeZxid                          int64
	dataWatches, existWatches, childWatch []string
}

// decodeRequest decodes a request frame (without its length prefix). It
// fails only on frames the real server cannot deserialize either, which
// close the connection; an op code it does not know decodes fine and is
// answered with ZUNIMPLEMENTED.
func decodeRequest(frame []byte) (*request, error) {
	r := &reader{buf: frame}
	req := &request{xid: r.int32(), op: r.int32()}
	if r.err != nil {
		return nil, r.err
	}
	switch req.op {
	case opCreate, opCreate2, opCreateContainer, opCreateTTL:
		req.path, req.data, req.acl, req.flags = r.string(), r.buffer(), r.acls(), r.int32()
		if req.op == opCreateTTL {
			req.ttl = r.int64()
		}
	case opDelete, opCheck:
		req.path, req.version = r.string(), r.int32()
	case opExists, opGetData, opGetChildren, opGetChildren2:
		req.path, req.watch = r.string(), r.bool()
	case opSetData:
		req.path, req.data, req.version = r.string(), r.buffer(), r.int32()
	case opGetACL, opSync:
		req.path = r.string()
	case opSetACL:
		req.path, req.acl, req.version = r.string(), r.acls(), r.int32()
	case opMulti:
		req.ops = decodeMulti(r)
	case opSetAuth:
		r.int32() // type, unused by the server
		req.scheme, req.auth = r.string(), r.buffer()
	case opSetWatches, opSetWatches2:
		req.relativeZxid = r.int64()
		req.dataWatches, req.existWatches, req.childWatch = r.strings(), r.strings(), r.strings()
		if req.op == opSetWatches2 {
			// Persistent watches: the fake has none, so these are read
			// and ignored.
			r.strings()
			r.strings()
		}
	case opReconfig:
		r.buffer()
		r.buffer()
		r.buffer()
		r.int64()
	}
	if r.err != nil {
		return nil, r.err
	}
	return req, nil
}

// decodeMulti reads a multi's ops up to the header marked done.
func decodeMulti(r *reader) []any {
	var ops []any
	for r.err == nil {
		typ, done := r.int32(), r.bool()
		r.int32() // err, unused in requests
		if done || r.err != nil {
			break
		}
		switch typ {
		case opCreate, opCreate2, opCreateContainer:
			op := &zk.CreateRequest{Path: r.string(), Data: r.buffer(), Acl: r.acls(), Flags: r.int32()}
			if typ == opCreateContainer {
				op.Flags = zk.FlagContainer
			}
			ops = append(ops, op)
		case opDelete:
			ops = append(ops, &zk.DeleteRequest{Path: r.string(), Version: r.int32()})
		case opSetData:
			ops = append(ops, &zk.SetDataRequest{Path: r.string(), Data: r.buffer(), Version: r.int32()})
		case opCheck:
			ops = append(ops, &zk.CheckVersionRequest{Path: r.string(), Version: r.int32()})
		default:
			// The server cannot deserialize an op it does not know.
			r.err = errShortRecord
		}
	}
	return ops
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
	r := &reader{buf: frame}
	c := &connectRequest{
		protocolVersion: r.int32(),
		lastZxidSeen:    r.int64(),
		timeout:         r.int32(),
		sessionID:       r.int64(),
		passwd:          r.buffer(),
	}
	if r.err == nil && len(r.buf) > 0 {
		c.readOnly, c.hasReadOnly = r.bool(), true
	}
	if r.err != nil {
		return nil, r.err
	}
	return c, nil
}

// encodeConnectResponse answers a connect request. The trailing readOnly
// flag goes only to a client that sent one, as the real server does.
func encodeConnectResponse(timeout int32, sessionID int64, passwd []byte, withReadOnly bool) []byte {
	w := &writer{}
	w.int32(0)
	w.int32(timeout)
	w.int64(sessionID)
	w.buffer(passwd)
	if withReadOnly {
		w.bool(false)
	}
	return w.buf
}

// replyHeader starts a reply frame's body.
func replyHeader(xid int32, zxid int64, code int32) *writer {
	w := &writer{}
	w.int32(xid)
	w.int64(zxid)
	w.int32(code)
	return w
}
