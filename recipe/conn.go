// Package recipe holds ZooKeeper coordination recipes — a herd-free mutex,
// and a leader election and a read/write lock built on it — written against Conn, the part of *zk.Conn that they use. Both a
// real *zk.Conn and an in-memory *zkfake.Conn satisfy Conn, so the same
// recipe runs against a real ensemble and against the fake.
//
// # Options
//
// Each constructor takes options of its own type, named for the recipe
// they configure: NewMutex takes MutexOption, NewElection ElectionOption,
// NewRWMutex RWMutexOption and NewSemaphore SemaphoreOption. An option that
// means the same to every recipe is an Option, which is all four at once,
// so the same value goes to any constructor as it is. The other options
// are typed for the recipes they apply to, and giving one to another
// constructor does not compile:
//
//	                       NewMutex  NewElection  NewRWMutex  NewSemaphore
//	WithACL                   x           x            x            x
//	WithNodeData              x           x            x            x
//	WithRetryTimeout          x           x            x            x
//	WithStatePollInterval     x           x            x            x
//	WithWakeHook              x           x            x            x
//	WithNodeName              x           x                         x
//	WithStateListener         x           x            x
//	WithRWNodeNames                                    x
//
// WithNodeName (a NodeNameOption) does not apply to an RWMutex, whose two
// sides need two names (WithRWNodeNames, an RWMutexOption only), and
// WithStateListener (a StateListenerOption) does not apply to a Semaphore,
// whose leases each have a state of their own. A list of options built
// for one constructor is a slice of its type:
//
//	opts := []recipe.SemaphoreOption{recipe.WithACL(acl), recipe.WithNodeName("lock-")}
//	sem := recipe.NewSemaphore(conn, "/sem", 3, opts...)
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
