package recipe

import (
	"github.com/go-zookeeper/zk"
)

// Conn is the part of *zk.Conn (github.com/go-zookeeper/zk v1.0.4) that
// the recipes use. Signatures and return conventions are those of *zk.Conn
// exactly.
//
// It is kept to what the recipes call, so that a wrapper of your own (one
// that counts, logs or injects faults) has little to forward; *zk.Conn and
// *zkfake.Conn satisfy it, and so does any value of zkfake/zktest's Conn,
// the whole method set. A later recipe may add a method of *zk.Conn to it,
// as Election added Get and ChildrenW (to read the leader, and to watch an
// election that has none).
type Conn interface {
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	Delete(path string, version int32) error
	Exists(path string) (bool, *zk.Stat, error)
	Get(path string) ([]byte, *zk.Stat, error)
	GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error)
	Children(path string) ([]string, *zk.Stat, error)
	ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error)
	Sync(path string) (string, error)
	SessionID() int64
	State() zk.State
}

// The real client satisfies Conn; recipe's tests check zkfake's the same
// way.
var _ Conn = (*zk.Conn)(nil)
