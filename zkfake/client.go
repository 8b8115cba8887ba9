package zkfake

import (
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// What go-zookeeper does on its own side of the wire, reproduced so that a
// call fails or succeeds on the fake exactly as on the real client: the
// sizes of its request encodings against its send buffer and the server's
// packet limit, and the protected create's retry.

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
