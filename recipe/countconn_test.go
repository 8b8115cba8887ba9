package recipe_test

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
)

// countingConn is a recipe.Conn that counts the requests sent through it
// and remembers which paths it set watches on, so tests and benchmarks can
// measure a recipe's traffic and know when a waiter is watching.
type countingConn struct {
	recipe.Conn
	ops atomic.Int64

	mu      sync.Mutex
	watched []string // paths of watches set, in order
}

func countRequests(c recipe.Conn) *countingConn { return &countingConn{Conn: c} }

func (c *countingConn) count() { c.ops.Add(1) }

func (c *countingConn) watch(path string) {
	c.mu.Lock()
	c.watched = append(c.watched, path)
	c.mu.Unlock()
}

// watches returns the paths watches were set on so far.
func (c *countingConn) watches() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.watched)
}

// watching reports whether a watch has been set on path.
func (c *countingConn) watching(path string) bool {
	return slices.Contains(c.watches(), path)
}

func (c *countingConn) Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	c.count()
	return c.Conn.Create(path, data, flags, acl)
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
	return c.Conn.CreateProtectedEphemeralSequential(path, data, acl)
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
	ok, stat, ch, err := c.Conn.ExistsW(path)
	if err == nil {
		c.watch(path)
	}
	return ok, stat, ch, err
}

func (c *countingConn) Get(path string) ([]byte, *zk.Stat, error) {
	c.count()
	return c.Conn.Get(path)
}

func (c *countingConn) GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	c.count()
	data, stat, ch, err := c.Conn.GetW(path)
	if err == nil {
		c.watch(path)
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
	children, stat, ch, err := c.Conn.ChildrenW(path)
	if err == nil {
		c.watch(path)
	}
	return children, stat, ch, err
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
