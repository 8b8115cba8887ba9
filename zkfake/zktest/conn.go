package zktest

import (
	"time"

	"github.com/go-zookeeper/zk"
)

// Conn is the method set of *zk.Conn (github.com/go-zookeeper/zk v1.0.4)
// that the suite checks: every request method but reconfiguration, the
// session's id, state and server, and Close (not SetLogger, Reconfig or
// IncrementalReconfig). Signatures and return conventions are those of *zk.Conn
// exactly, so a real *zk.Conn, zkfake's *Conn and any wrapper of either
// (Wrap) satisfy it.
//
// The interface lives beside the suite, as fs.FS beside testing/fstest's
// TestFS: the implementations (zkfake, a real ensemble) and the harnesses
// import it; the recipes take the smaller Conn, which every Conn
// satisfies.
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
	Multi(ops ...any) ([]zk.MultiResponse, error)
	Sync(path string) (string, error)
	GetACL(path string) ([]zk.ACL, *zk.Stat, error)
	SetACL(path string, acl []zk.ACL, version int32) (*zk.Stat, error)
	AddAuth(scheme string, auth []byte) error
	SessionID() int64
	State() zk.State
	Server() string
	Close()
}

// The real client satisfies Conn; package fake checks zkfake's the same way.
var _ Conn = (*zk.Conn)(nil)
