package zkbench

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
)

// countingConn is a recipe.Conn that counts the requests sent through it
// into a counter that several connections may share, and tells onWatch
// about every data watch it sets with GetW on a node it did not create
// (what a lock waiter does to park on its predecessor; the GetW on its own
// node arms the watch behind Mutex.Lost). Each method counts as one request;
// CreateProtectedEphemeralSequential, which may send a listing after a lost
// reply, counts as one too.
type countingConn struct {
	recipe.Conn
	ops     *atomic.Int64
	onWatch func()

	mu  sync.Mutex
	own map[string]bool // nodes this connection created: a GetW on one is not parking
}

// created notes a node this connection made.
func (c *countingConn) created(path string, err error) {
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.own == nil {
		c.own = map[string]bool{}
	}
	c.own[path] = true
}

func (c *countingConn) isOwn(path string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.own[path]
}

func (c *countingConn) count() { c.ops.Add(1) }

func (c *countingConn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	c.count()
	p, err := c.Conn.Create(path, data, flags, acl)
	c.created(p, err)
	return p, err
}

func (c *countingConn) CreateContainer(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	c.count()
	return c.Conn.CreateContainer(path, data, flags, acl)
}

func (c *countingConn) CreateTTL(path string, data []byte, flags int32, acl []zk.ACL, ttl time.Duration) (string, error) {
	c.count()
	return c.Conn.CreateTTL(path, data, flags, acl, ttl)
}

func (c *countingConn) CreateProtectedEphemeralSequential(path string, data []byte, acl []zk.ACL) (string, error) {
	c.count()
	p, err := c.Conn.CreateProtectedEphemeralSequential(path, data, acl)
	c.created(p, err)
	return p, err
}

func (c *countingConn) Delete(path string, version int32) error {
	c.count()
	return c.Conn.Delete(path, version)
}

func (c *countingConn) Exists(path string) (bool, *zk.Stat, error) {
	c.count()
	return c.Conn.Exists(path)
}

func (c *countingConn) ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	c.count()
	return c.Conn.ExistsW(path)
}

func (c *countingConn) Get(path string) ([]byte, *zk.Stat, error) {
	c.count()
	return c.Conn.Get(path)
}

func (c *countingConn) GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	c.count()
	data, stat, ch, err := c.Conn.GetW(path)
	if err == nil && c.onWatch != nil && !c.isOwn(path) {
		c.onWatch()
	}
	return data, stat, ch, err
}

func (c *countingConn) Set(path string, data []byte, version int32) (*zk.Stat, error) {
	c.count()
	return c.Conn.Set(path, data, version)
}

func (c *countingConn) Children(path string) ([]string, *zk.Stat, error) {
	c.count()
	return c.Conn.Children(path)
}

func (c *countingConn) ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	c.count()
	return c.Conn.ChildrenW(path)
}

func (c *countingConn) Multi(ops ...any) ([]zk.MultiResponse, error) {
	c.count()
	return c.Conn.Multi(ops...)
}

func (c *countingConn) Sync(path string) (string, error) {
	c.count()
	return c.Conn.Sync(path)
}

func (c *countingConn) GetACL(path string) ([]zk.ACL, *zk.Stat, error) {
	c.count()
	return c.Conn.GetACL(path)
}

func (c *countingConn) SetACL(path string, acl []zk.ACL, version int32) (*zk.Stat, error) {
	c.count()
	return c.Conn.SetACL(path, acl, version)
}

func (c *countingConn) AddAuth(scheme string, auth []byte) error {
	c.count()
	return c.Conn.AddAuth(scheme, auth)
}
