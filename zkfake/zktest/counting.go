package zktest

import (
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// CountingConn is a Conn that counts the requests sent through it
// and reports the nodes it creates and the watches it sets, so that a test
// or a benchmark can measure a recipe's traffic (requests per lock
// acquisition) and tell when a waiter has parked. Every method counts as
// one request; CreateProtectedEphemeralSequential, which may send a listing
// after a lost reply, counts as one too.
type CountingConn struct {
	Conn
	// Requests counts the requests. Several CountingConns may share one
	// counter; NewCountingConn gives each its own.
	Requests *atomic.Int64
	// OnCreate, if set, is called with the path of every node created
	// through the connection (by Create or CreateProtectedEphemeralSequential).
	OnCreate func(path string)
	// OnWatch, if set, is called after every watch the connection sets:
	// op is "exists" (ExistsW), "getData" (GetW) or "getChildren"
	// (ChildrenW), path the node watched.
	OnWatch func(op, path string)
}

// NewCountingConn wraps conn with a counter of its own.
func NewCountingConn(conn Conn) *CountingConn {
	return &CountingConn{Conn: conn, Requests: new(atomic.Int64)}
}

func (c *CountingConn) count() { c.Requests.Add(1) }

func (c *CountingConn) created(path string, err error) {
	if err == nil && c.OnCreate != nil {
		c.OnCreate(path)
	}
}

func (c *CountingConn) watched(op, path string, err error) {
	if err == nil && c.OnWatch != nil {
		c.OnWatch(op, path)
	}
}

// Create counts a request and reports the node created.
func (c *CountingConn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	c.count()
	p, err := c.Conn.Create(path, data, flags, acl)
	c.created(p, err)
	return p, err
}

// CreateContainer counts a request.
func (c *CountingConn) CreateContainer(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	c.count()
	return c.Conn.CreateContainer(path, data, flags, acl)
}

// CreateTTL counts a request.
func (c *CountingConn) CreateTTL(path string, data []byte, flags int32, acl []zk.ACL, ttl time.Duration) (string, error) {
	c.count()
	return c.Conn.CreateTTL(path, data, flags, acl, ttl)
}

// CreateProtectedEphemeralSequential counts a request and reports the node
// created.
func (c *CountingConn) CreateProtectedEphemeralSequential(path string, data []byte, acl []zk.ACL) (string, error) {
	c.count()
	p, err := c.Conn.CreateProtectedEphemeralSequential(path, data, acl)
	c.created(p, err)
	return p, err
}

// Delete counts a request.
func (c *CountingConn) Delete(path string, version int32) error {
	c.count()
	return c.Conn.Delete(path, version)
}

// Exists counts a request.
func (c *CountingConn) Exists(path string) (bool, *zk.Stat, error) {
	c.count()
	return c.Conn.Exists(path)
}

// ExistsW counts a request and reports the watch.
func (c *CountingConn) ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	c.count()
	ok, stat, ch, err := c.Conn.ExistsW(path)
	c.watched("exists", path, err)
	return ok, stat, ch, err
}

// Get counts a request.
func (c *CountingConn) Get(path string) ([]byte, *zk.Stat, error) {
	c.count()
	return c.Conn.Get(path)
}

// GetW counts a request and reports the watch.
func (c *CountingConn) GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	c.count()
	data, stat, ch, err := c.Conn.GetW(path)
	c.watched("getData", path, err)
	return data, stat, ch, err
}

// Set counts a request.
func (c *CountingConn) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	c.count()
	return c.Conn.Set(path, data, version)
}

// Children counts a request.
func (c *CountingConn) Children(path string) ([]string, *zk.Stat, error) {
	c.count()
	return c.Conn.Children(path)
}

// ChildrenW counts a request and reports the watch.
func (c *CountingConn) ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	c.count()
	children, stat, ch, err := c.Conn.ChildrenW(path)
	c.watched("getChildren", path, err)
	return children, stat, ch, err
}

// Multi counts a request.
func (c *CountingConn) Multi(ops ...any) ([]zk.MultiResponse, error) {
	c.count()
	return c.Conn.Multi(ops...)
}

// Sync counts a request.
func (c *CountingConn) Sync(path string) (string, error) {
	c.count()
	return c.Conn.Sync(path)
}

// GetACL counts a request.
func (c *CountingConn) GetACL(path string) ([]zk.ACL, *zk.Stat, error) {
	c.count()
	return c.Conn.GetACL(path)
}

// SetACL counts a request.
func (c *CountingConn) SetACL(path string, acl []zk.ACL, version int32) (*zk.Stat, error) {
	c.count()
	return c.Conn.SetACL(path, acl, version)
}

// AddAuth counts a request.
func (c *CountingConn) AddAuth(scheme string, auth []byte) error {
	c.count()
	return c.Conn.AddAuth(scheme, auth)
}
