package recipe

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// ErrNoLeader is returned by CurrentLeader and Election.Leader when the
// election has no candidate at all: its directory is empty or does not
// exist.
var ErrNoLeader = errors.New("recipe: no leader")

// Leader is an election's leader as a reader sees it.
type Leader struct {
	Node    string // full path of the leader's node
	Value   []byte // the node's data: the value the leader campaigned with
	Token   int64  // the node's czxid: the fencing token (epoch); grows with every new leader
	Session int64  // the node's ephemeral owner
}

// Election is a leader election: the ZooKeeper election recipe, built on a
// Mutex. The leader is the holder of the Mutex on the election's directory;
// the lock's queue is the line of candidates, in the order they
// campaigned; each candidate watches only its predecessor, so when the
// leader resigns or its session ends exactly one candidate wakes and
// becomes leader. Everything the Mutex does for a hold it does for a
// leadership: protected creates found again by GUID and adopted only if
// the current session owns them, cancellation that deletes the node,
// Suspended while the connection is down, Lost when the node or the
// session is gone, and the background deletion of nodes it could not
// delete. Campaign is Lock, Resign is Unlock.
//
// # Value
//
// A candidate campaigns with a value, the data of its node (WithNodeData):
// an address or a name by which the others can reach or name the leader.
// Leader, CurrentLeader and Observe report it.
//
// # Fencing
//
// Token is the czxid of the leader's node, and so grows with every new
// leader: a candidate's node is created after every node ahead of it in
// the line, and a candidate that campaigns again gets a new node. Pass it
// with every write the leader makes to another system, and let that
// system refuse a token below the largest it has accepted: a leader that
// was cut off and replaced is then refused there, even before it notices.
//
// # Suspended: leadership in doubt
//
// While the connection is down nobody can tell whether the session, and
// with it the leadership, still lives. IsLeader is false then (State is
// MutexSuspended) but Lost stays open. If the client reconnects within
// the session timeout, the session and its node are intact: IsLeader is
// true again, with the same Token, and no other candidate led meanwhile.
// If the session expired, its node is gone, the next candidate leads, and
// Lost closes once the client learns of the expiry. A leader should pause
// its work while IsLeader is false and abandon it when Lost closes. This
// is how Curator's LeaderLatch behaves under its default
// StandardConnectionStateErrorPolicy: it gives up leadership on SUSPENDED
// and, on RECONNECTED, takes it again if its node is still first. (With
// SessionConnectionStateErrorPolicy, LeaderLatch keeps hasLeadership
// true through SUSPENDED, which no Election does.)
//
// # Interoperating by node name
//
// Nodes are named as the Mutex names them: "_c_<GUID>-" + the node name +
// the sequence number, DefaultNodeName ("__lock__") unless WithNodeName
// says otherwise, and any child ending in a sequence number is a
// candidate. kazoo's Election is a kazoo Lock on the election path, whose
// nodes are "<uuid>__lock__<seq>" carrying the identifier as data, so
// with the default name an Election and kazoo's Election (and
// go-zookeeper's zk.Lock) on the same path exclude each other, and
// kazoo's contenders() lists our values. Curator's LeaderLatch names its
// nodes "_c_<uuid>-latch-<seq>" (a protected create of "latch-") with the
// participant id as data, and orders them by the text after the last
// "latch-": WithNodeName("latch-") gives names of the same form (Curator
// writes its GUID as a 36-character UUID, the Mutex as 32 hex digits;
// neither reads the other's), which both order alike. Curator's
// LeaderSelector is an InterProcessMutex on the path ("lock-" nodes):
// WithNodeName("lock-"). See Mutex for how each of them reads names, and
// for the counter's wrap, past which they order the line otherwise.
//
// # Goroutines
//
// An Election is safe for concurrent use. Campaign on an Election that
// leads (or is suspended) returns at once, without counting up as the
// Mutex's Lock does, so that one Resign always ends the leadership.
// Campaigns on one Election run one at a time. An Election that only
// reads (Leader, Observe) never campaigns and has no node.
type Election struct {
	m    *Mutex
	conn Conn

	// campaigning serializes Campaign, so that two of them on one handle
	// cannot both Lock: the second would count the hold up, and a single
	// Resign would no longer end the leadership.
	campaigning chan struct{}
}

// NewElection returns an Election whose candidates queue under the
// directory path and campaign with value as the data of their nodes. The
// options mean for the candidates' nodes what they mean for a Mutex's
// (WithNodeName, WithACL, WithRetryTimeout, WithStatePollInterval,
// WithStateListener, WithWakeHook); they apply after value, so a
// WithNodeData among them replaces it. Nothing is sent to ZooKeeper until
// Campaign, Leader or Observe.
func NewElection(conn Conn, path string, value []byte, opts ...ElectionOption) *Election {
	cfg := defaultConfig()
	cfg.data = bytes.Clone(value)
	for _, opt := range opts {
		opt.applyElection(&cfg)
	}
	return &Election{
		m:           newMutex(conn, path, cfg),
		conn:        conn,
		campaigning: make(chan struct{}, 1),
	}
}

// Campaign blocks until the Election leads, ctx is done, or an error
// occurs that retrying cannot fix: it is the Mutex's Lock, with its
// guarantees. On any error the candidate's node is gone (or, if even its
// deletion failed, is deleted in the background) and the error is
// returned: ctx.Err() if ctx ended the wait, zk.ErrClosing if the Conn was
// closed. A session that expires while Campaign waits is not an error:
// the candidate joins the back of the line again with the new session.
// On an Election that leads already, or whose leadership is suspended,
// Campaign returns nil at once.
func (e *Election) Campaign(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case e.campaigning <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-e.campaigning }()
	if s := e.m.State(); s == MutexHeld || s == MutexSuspended {
		return nil
	}
	return e.m.Lock(ctx)
}

// Resign gives up the leadership: it deletes the leader's node, and the
// next candidate in line leads. It is the Mutex's Unlock: ErrNotLocked if
// the Election does not lead (a Campaign still waiting is not stopped; its
// ctx does that), ErrLockLost if the leadership was lost first (then
// someone else may have led meanwhile), and, when the connection stays
// lost for the retry timeout, an error with the resignation pending
// (MutexReleasing, see Mutex.Unlock).
func (e *Election) Resign() error { return e.m.Unlock() }

// ResignContext is Resign bounded by ctx instead of the retry timeout (see
// Mutex.UnlockContext).
func (e *Election) ResignContext(ctx context.Context) error { return e.m.UnlockContext(ctx) }

// IsLeader reports whether the Election leads and is connected: State is
// MutexHeld. It is false while the leadership is suspended (in doubt, see
// the type's documentation).
func (e *Election) IsLeader() bool { return e.m.State() == MutexHeld }

// Token returns the fencing token of the current leadership, the czxid of
// the leader's node; 0 when the Election does not lead. A suspended
// leadership keeps its token.
func (e *Election) Token() int64 { return e.m.Token() }

// Lost returns a channel that is closed when the current leadership is
// lost: its node was deleted, or its session expired or was closed. A
// leadership ended by Resign leaves its channel open; without a
// leadership Lost returns a closed channel (see Mutex.Lost).
func (e *Election) Lost() <-chan struct{} { return e.m.Lost() }

// State returns where the Election's leadership stands: MutexHeld while it
// leads, MutexSuspended while that is in doubt, MutexLost once it is lost,
// MutexReleasing while a failed Resign is pending, MutexUnlocked otherwise.
func (e *Election) State() MutexState { return e.m.State() }

// Path returns the election's directory, as given to NewElection.
func (e *Election) Path() string { return e.m.Path() }

// Leader returns the election's current leader, as CurrentLeader does,
// with the election's retry timeout and with names read as its own
// candidates' are (see WithNodeName; this differs from CurrentLeader only
// past the sequence counter's wrap, for a node name that ends in a letter
// or a digit).
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	return readLeader(ctx, e.conn, e.m.dir, e.m.cfg.nodeName, e.m.cfg.retryTimeout, &e.m.closed)
}

// CurrentLeader returns the leader of the election at path: the first
// candidate in the order the Mutex queues them, read after a sync so that
// the answer is at least as fresh as the call, whichever member conn
// reads from. If that candidate's node goes between the listing and the
// read, it lists again. It returns ErrNoLeader when there is no
// candidate (or no directory). Connection loss and an expired session are
// retried for the default retry timeout (15s), within ctx; a closed Conn
// fails at once with zk.ErrClosing, an invalid path with
// zk.ErrInvalidPath.
//
// The leader it reports may be a moment ahead of the candidate itself: a
// candidate whose predecessor is gone is the leader from then on, though
// its Campaign returns only once it has seen so.
func CurrentLeader(ctx context.Context, conn Conn, path string) (Leader, error) {
	var closed atomic.Bool
	return readLeader(ctx, conn, path, "", defaultRetryTimeout, &closed)
}

// readLoss reports the errors a read retries: a lost connection, or an
// expired session, after which go-zookeeper carries on with a new one.
func readLoss(err error) bool {
	return IsConnectionLoss(err) || errors.Is(err, zk.ErrSessionExpired)
}

// readLeader is CurrentLeader for a directory whose candidates are named
// with nodeName ("" reads every name by its suffix alone).
func readLeader(ctx context.Context, conn Conn, dir, nodeName string, limit time.Duration, closed *atomic.Bool) (Leader, error) {
	if err := ctx.Err(); err != nil {
		return Leader{}, err
	}
	var leader Leader
	err := retryWhile(ctx, conn, closed, limit, readLoss, func() error {
		// A request made while the client is cut off waits in its queue
		// until it reconnects or gives up; ctx bounds that wait. The
		// abandoned attempt writes only its own got, which nobody reads.
		var got Leader
		err, abandoned := callBounded(ctx, func() (err error) {
			got, err = leaderOnce(conn, dir, nodeName)
			return err
		})
		if err == nil && !abandoned {
			leader = got
		}
		return err
	})
	if err != nil {
		return Leader{}, err
	}
	return leader, nil
}

// leaderOnce syncs, lists and reads the first candidate, listing again
// while the first is gone before it can be read.
func leaderOnce(conn Conn, dir, nodeName string) (Leader, error) {
	if _, err := conn.Sync(dir); err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			return Leader{}, ErrNoLeader
		}
		return Leader{}, err
	}
	for {
		children, _, err := conn.Children(dir)
		if errors.Is(err, zk.ErrNoNode) {
			return Leader{}, ErrNoLeader
		}
		if err != nil {
			return Leader{}, err
		}
		queue := queueOrderIn(children, nodeName)
		if len(queue) == 0 {
			return Leader{}, ErrNoLeader
		}
		node := joinPath(dir, queue[0].name)
		data, stat, err := conn.Get(node)
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone since the listing: the next one may lead now
		}
		if err != nil {
			return Leader{}, err
		}
		return leaderOf(node, data, stat), nil
	}
}

func leaderOf(node string, data []byte, stat *zk.Stat) Leader {
	return Leader{Node: node, Value: data, Token: stat.Czxid, Session: stat.EphemeralOwner}
}
