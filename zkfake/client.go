package zkfake

import (
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// What go-zookeeper does on its own side of the wire, reproduced so that a
// call fails or succeeds on the fake exactly as on the real client: the
// sizes of its request encodings against its send buffer and the server's
// packet limit, the checks of a create's flags and path, the shape of a
// multi's reply, and the protected create's retry.

// maxPacket is the largest request the server reads (jute.maxbuffer, 1 MiB
// less one byte); a larger one makes it close the connection.
const maxPacket = 0xfffff

// clientBuffer is go-zookeeper's send buffer: a request that does not fit
// fails in the client with zk.ErrShortBuffer.
const clientBuffer = 1536 * 1024

// Sizes of go-zookeeper's request encodings, for the packet limit.
func stringSize(s string) int { return 4 + len(s) }
func bytesSize(b []byte) int  { return 4 + len(b) }
func aclSize(acl []zk.ACL) int {
	n := 4
	for _, a := range acl {
		n += 4 + stringSize(a.Scheme) + stringSize(a.ID)
	}
	return n
}

const headerSize = 8 // xid and op code

func createSize(path string, data []byte, acl []zk.ACL) int {
	return headerSize + stringSize(path) + bytesSize(data) + aclSize(acl) + 4
}

// multiSize is the size of go-zookeeper's encoding of a multi of ops: a
// header for each op and one to end them. An op of a type it cannot encode
// fails the call before anything is sent, with its error.
func multiSize(ops []any) (int, error) {
	size := headerSize + 9
	for _, op := range ops {
		switch op := op.(type) {
		case *zk.CreateRequest:
			size += 9 + createSize(op.Path, op.Data, op.Acl) - headerSize
		case *zk.SetDataRequest:
			size += 9 + stringSize(op.Path) + bytesSize(op.Data) + 4
		case *zk.DeleteRequest, *zk.CheckVersionRequest:
			size += 9 + stringSize(multiPath(op)) + 4
		default:
			return 0, fmt.Errorf("unknown operation type %T", op)
		}
	}
	return size, nil
}

// checkCreate makes the checks go-zookeeper's create calls make before they
// send anything, in its order and with its errors: the flags must name a
// create mode, the path must be valid (a sequential one may end in '/',
// the server appends to it), and the mode must be one the call takes. op
// is the call's request: "create", "createContainer" or "createTTL".
func checkCreate(op, path string, flags int32) error {
	kind, sequential, ok := decodeFlags(flags)
	if !ok {
		return fmt.Errorf("invalid flag value: [%v]", flags)
	}
	if err := checkClientPath(path, sequential); err != nil {
		return err
	}
	switch {
	case op == "create" && kind == kindTTL:
		return fmt.Errorf("Create with TTL flag disallowed: %w", zk.ErrInvalidFlags)
	case op == "createContainer" && kind != kindContainer:
		return fmt.Errorf("CreateContainer requires container flag: %w", zk.ErrInvalidFlags)
	case op == "createTTL" && kind != kindTTL:
		return fmt.Errorf("CreateTTL requires TTL flag: %w", zk.ErrInvalidFlags)
	}
	return nil
}

// multiReply shapes the answer to a multi of ops as go-zookeeper's Multi
// returns it: mr and err are the request's results and error, err
// zk.ErrConnectionClosed if no reply came.
func multiReply(ops []any, mr []zk.MultiResponse, err error) ([]zk.MultiResponse, error) {
	if err == zk.ErrConnectionClosed {
		return nil, err
	}
	if mr == nil {
		// go-zookeeper answers a request that got no reply with an empty,
		// non-nil slice.
		mr = []zk.MultiResponse{}
	}
	if err == nil {
		// The server answers a container create in a multi with a result
		// type (create2) go-zookeeper v1.0.4 cannot decode: the multi is
		// applied, but the client gets zk.ErrAPIError and the results
		// before that op only.
		for i, op := range ops {
			if req, ok := op.(*zk.CreateRequest); ok && req.Flags == zk.FlagContainer {
				return mr[:i], zk.ErrAPIError
			}
		}
	}
	return mr, err
}

// protectedPrefix is go-zookeeper's marker for protected node names.
const protectedPrefix = "_c_"

// CreateProtectedEphemeralSequential creates an ephemeral sequential node
// whose name starts with a GUID, and on a lost reply looks for it by that
// GUID, exactly as go-zookeeper does (including its weakness: it does not
// check that the node found belongs to the current session). The GUID comes
// from the server's seeded generator.
func (c *Conn) CreateProtectedEphemeralSequential(path string, data []byte, acl []zk.ACL) (string, error) {
	if err := checkClientPath(path, true); err != nil {
		return "", err
	}
	c.srv.mu.Lock()
	guid := fmt.Sprintf("%016x%016x", c.srv.rng.Uint64(), c.srv.rng.Uint64())
	c.srv.mu.Unlock()
	parts := strings.Split(path, "/")
	parts[len(parts)-1] = protectedPrefix + guid + "-" + parts[len(parts)-1]
	rootPath := strings.Join(parts[:len(parts)-1], "/")
	protectedPath := strings.Join(parts, "/")

	var newPath string
	var err error
	for i := 0; i < 3; i++ {
		newPath, err = c.Create(protectedPath, data, zk.FlagEphemeral|zk.FlagSequence, acl)
		switch err {
		case zk.ErrSessionExpired:
		case zk.ErrConnectionClosed:
			children, _, err := c.Children(rootPath)
			if err != nil {
				return "", err
			}
			for _, p := range children {
				if strings.HasPrefix(p, protectedPrefix) && len(p) >= len(protectedPrefix)+32 && p[len(protectedPrefix):len(protectedPrefix)+32] == guid {
					return rootPath + "/" + p, nil
				}
			}
		case nil:
			return newPath, nil
		default:
			return "", err
		}
	}
	return "", err
}
