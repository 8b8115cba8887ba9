// Package recipe holds ZooKeeper coordination recipes — a herd-free mutex and
// its kin — written against Conn, the part of *zk.Conn that coordination code
// uses. Both a real *zk.Conn and an in-memory *zkfake.Conn satisfy Conn, so
// the same recipe runs against a real ensemble and against the fake.
package recipe

import (
	"time"

	"github.com/go-zookeeper/zk"
)

// Conn is the method set of *zk.Conn (github.com/go-zookeeper/zk v1.0.4)
// that coordination code uses. Signatures and return conventions are those
// of *zk.Conn exactly.
type Conn interface {
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	CreateContainer(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	CreateTTL(path string, data []byte, flags int32, acl []zk.ACL, ttl time.Duration) (string, error)
	CreateProtectedEphemeralSequential(path string, data []byte, acl []zk.ACL) (string, error)
	Delete(path string, version int32) error
	Exists(path string) (bool, *zk.Stat, error)
	ExistsW(path string) (bool, *zk.Stat, <-chan zk.Event, error)
	Get(path string) ([]byte, *zk.Stat, error)
	GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error)
	Set(path string, data []byte, version int32) (*zk.Stat, error)
	Children(path string) ([]string, *zk.Stat, error)
	ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error)
	Multi(ops ...interface{}) ([]zk.MultiResponse, error)
	Sync(path string) (string, error)
	GetACL(path string) ([]zk.ACL, *zk.Stat, error)
	SetACL(path string, acl []zk.ACL, version int32) (*zk.Stat, error)
	AddAuth(scheme string, auth []byte) error
	SessionID() int64
	State() zk.State
	Server() string
	Close()
}

// The real client satisfies Conn; zkfake checks its own Conn the same way.
var _ Conn = (*zk.Conn)(nil)
