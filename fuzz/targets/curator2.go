package targets

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// This file is the part of Curator 2.x (curator-client and
// curator-framework, 2.10.0 to 2.11.0) that the catalogue's ports of its
// InterProcessMutex and InterProcessSemaphoreV2 stand on: the client and
// its retry loop (CuratorZookeeperClient, RetryLoop, RetryNTimes), the
// protected create (CreateBuilderImpl withProtection with
// creatingParentContainersIfNeeded), and the guaranteed delete
// (DeleteBuilderImpl guaranteed, FailedDeleteManager). Its connection
// state is curator2state.go's, InterProcessMutex curator2mutex.go's. Left
// out: namespaces, compression, ACL providers, background operations
// other than the guaranteed delete, and revocation.
//
// Java's exceptions are Go errors: go-zookeeper's connection loss
// (zk.ErrConnectionClosed, zk.ErrNoServer) for ConnectionLossException,
// zk.ErrSessionExpired, zk.ErrNoNode; a Thread.interrupt() is the ctx of
// the call being done, felt where Java feels it in these paths: Thread.sleep,
// Object.wait and a CountDownLatch's await (errCurator2Interrupted). The
// ZooKeeper calls themselves are made whole.

// curator2 holds Curator's defaults and the retry policy the ports use.
const (
	// curator2ConnectionTimeout is CuratorFrameworkFactory's default
	// connection timeout, how long each try of the retry loop waits for
	// the connection (CuratorZookeeperClient.internalBlockUntilConnectedOrTimedOut).
	curator2ConnectionTimeout = 15 * time.Second
	// curator2SessionTimeout is CuratorFrameworkFactory's default session
	// timeout, the one ConnectionState.checkTimeouts counts (the one it
	// asked for, not the one the server granted).
	curator2SessionTimeout = 60 * time.Second
	// curator2Retries and curator2RetrySleep are the retry policy,
	// RetryNTimes(3, 1000): a policy Curator ships, with as many retries
	// as the ExponentialBackoffRetry(1000, 3) of its documentation, but no
	// random sleeps.
	curator2Retries    = 3
	curator2RetrySleep = time.Second
	// curator2ProtectedPrefix is CreateBuilderImpl.PROTECTED_PREFIX.
	curator2ProtectedPrefix = "_c_"
	// curator2LockName is InterProcessMutex's LOCK_NAME.
	curator2LockName = "lock-"
)

// errCurator2Interrupted is Java's InterruptedException: the call's ctx
// was done at a point where the Java thread would have been interrupted.
var errCurator2Interrupted = errors.New("java.lang.InterruptedException")

// errCurator2NotStarted is what Curator throws once the client is closed
// (IllegalStateException: instance must be started).
var errCurator2NotStarted = errors.New("java.lang.IllegalStateException: instance must be started before calling this method")

// curator2Client is a CuratorFramework over the process's Conn: its
// connection state, read from the Conn, and its retry loop. The targets a
// port is handed to (Semaphore's NewLeaser, Lock's NewLocker) give it the
// Conn alone, not the session's events: so it waits for the connection by
// looking at the Conn's state every curator2Poll, where Curator's latch
// wakes at the connection event, and it takes its client for closed once
// a call fails as a closed Conn does (closedConn), where a CuratorFramework
// knows it was closed.
type curator2Client struct {
	conn zktest.Conn
	// protectedSession is CURATOR-498's fix (4.2.0, ProtectedMode): a
	// protected ephemeral create remembers its session, and ignores (and
	// deletes in the background) a node its search finds once the
	// session has changed.
	protectedSession bool
	// injectExpiry is ConnectionStateManager's simulated session
	// expiration (3.0.0 on): once the connection has been down for the
	// session timeout the server granted, the client gives its session
	// up and opens a new one, instead of ConnectionState.checkTimeouts'
	// reset after both timeouts (2.x).
	injectExpiry bool

	mu     sync.Mutex
	closed bool // the Conn was closed (or the process died)
	// downSince is when the client first saw its connection down, zero
	// while it is up: ConnectionState's connectionStartMs, as the client
	// sees it when it looks.
	downSince time.Time
	// watching counts the calls under way, for which the state manager's
	// thread runs (watchSession).
	watching  int
	stopWatch chan struct{}
}

// curator2Poll is how often the client looks at its Conn's state while it
// waits for the connection.
const curator2Poll = 100 * time.Millisecond

// newCurator2Client starts the client on the process's Conn.
func newCurator2Client(conn zktest.Conn) *curator2Client {
	return &curator2Client{conn: conn}
}

// started is client.getState() == CuratorFrameworkState.STARTED.
func (c *curator2Client) started() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.closed
}

// noteFailure takes the client for closed if err is a closed Conn's.
func (c *curator2Client) noteFailure(err error) {
	if err != nil && closedConn(c.conn, err) {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
	}
}

// blockUntilConnectedOrTimedOut is
// CuratorZookeeperClient.internalBlockUntilConnectedOrTimedOut: while not
// connected, wait for the connection until the connection timeout is
// spent.
func (c *curator2Client) blockUntilConnectedOrTimedOut(ctx context.Context) error {
	for wait := curator2ConnectionTimeout; !c.connected() && wait > 0 && c.started(); wait -= curator2Poll {
		if err := curator2Sleep(ctx, curator2Poll); err != nil {
			return err
		}
	}
	return nil
}

// curator2ShouldRetry is RetryLoop.shouldRetry: connection loss, an
// operation timeout, a moved or an expired session.
func curator2ShouldRetry(err error) bool {
	return recipe.IsConnectionLoss(err) || errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved)
}

// callWithRetry is RetryLoop.callWithRetry with RetryNTimes: each try
// waits for the connection first; a retryable failure is tried again,
// after a sleep, until the policy's retries are spent. A closed client
// fails at once.
func (c *curator2Client) callWithRetry(ctx context.Context, op func() error) error {
	defer c.watchSession()()
	for retry := 0; ; retry++ {
		if !c.started() {
			return errCurator2NotStarted
		}
		if err := c.blockUntilConnectedOrTimedOut(ctx); err != nil {
			return err
		}
		c.checkTimeouts()
		err := op()
		c.noteFailure(err)
		if err == nil || !curator2ShouldRetry(err) || retry >= curator2Retries || !c.started() {
			return err
		}
		if err := curator2Sleep(ctx, curator2RetrySleep); err != nil {
			return err
		}
	}
}

// threadWakeSkew is how much longer than asked a Java thread of the
// ports sleeps. The fake's reconnect rounds come a whole second apart from
// the moment a connection drops, as do Curator's polls of the connection
// (sleepAndQueueOperation) and its retries from a request that failed
// with it: a sleep that ended at the very instant of a round would read
// the connection's state before or after the round by the Go scheduler's
// choice, and a seed would not replay. Real clocks never meet so exactly;
// a nanosecond later, the sleeper reads the state after the round.
const threadWakeSkew = time.Nanosecond

// allowRetry is RetryNTimes.allowRetry, sleeping as the policy does.
func curator2AllowRetry(ctx context.Context, retryCount int) bool {
	return retryCount < curator2Retries && curator2Sleep(ctx, curator2RetrySleep) == nil
}

// curator2Sleep is Thread.sleep: interrupted when ctx is done.
func curator2Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d + threadWakeSkew):
		return nil
	case <-ctx.Done():
		return errCurator2Interrupted
	}
}

// createProtectedEphemeralSequential is
// client.create().creatingParentContainersIfNeeded().withProtection()
// .withMode(EPHEMERAL_SEQUENTIAL).forPath(path, data), in the foreground:
// CreateBuilderImpl.pathInForeground within the retry loop, where every
// try after the first looks for a node of the create's protected id
// first (findProtectedNodeInForeground), and protectedPathInForeground,
// which on a connection loss that outlasts the retries starts a
// background search for the node to delete it
// (FindAndDeleteProtectedNodeInBackground, here the guaranteed delete of
// what one listing finds). The parents are made persistent: Curator 2.x
// runs on ZooKeeper 3.4, which has no containers. The protected id is
// Curator's UUID written as its 32 hex digits without the dashes, the
// form the harness elides from its stories.
func (c *curator2Client) createProtectedEphemeralSequential(ctx context.Context, path string, data []byte) (string, error) {
	dir, name := path[:strings.LastIndexByte(path, '/')], path[strings.LastIndexByte(path, '/')+1:]
	id := curator2UUID()
	adjusted := dir + "/" + curator2ProtectedPrefix + id + "-" + name
	first := true
	var created string
	session := int64(0) // ProtectedMode.sessionId
	err := c.callWithRetry(ctx, func() error {
		if !first {
			found, err := c.findProtectedNode(ctx, dir, id)
			if err != nil {
				return err
			}
			if c.protectedSession {
				found = c.validateFoundNode(&session, found)
			}
			if found != "" {
				created = found
				return nil
			}
		}
		first = false
		if c.protectedSession && session == 0 {
			session = c.conn.SessionID() // ProtectedMode.checkSetSessionId
		}
		p, err := c.conn.Create(adjusted, data, zk.FlagEphemeral|zk.FlagSequence, zktest.OpenACL)
		if errors.Is(err, zk.ErrNoNode) {
			if err := c.mkdirs(dir); err != nil {
				return err
			}
			p, err = c.conn.Create(adjusted, data, zk.FlagEphemeral|zk.FlagSequence, zktest.OpenACL)
		}
		created = p
		return err
	})
	// Not a KeeperException, or a connection loss: the create may have
	// gone through.
	if recipe.IsConnectionLoss(err) || errors.Is(err, errCurator2Interrupted) || errors.Is(err, errCurator2NotStarted) {
		go c.findAndDeleteProtectedNode(dir, id)
	}
	return created, err
}

// validateFoundNode is ProtectedMode.validateFoundNode (4.2.0): once the
// session is not the one the create began in, a found node is its old
// session's, about to go: it is deleted in the background (guaranteed)
// and not taken.
func (c *curator2Client) validateFoundNode(session *int64, found string) string {
	if now := c.conn.SessionID(); *session != now {
		if found != "" {
			go c.deleteInBackground(found)
			found = ""
		}
		*session = now
	}
	return found
}

// protectedChild is the child of dir, among children, whose name starts
// with the protected prefix of id ("_c_<id>-"), "" if none: the node
// findProtectedNodeInForeground looks for.
func protectedChild(dir string, children []string, id string) string {
	prefix := curator2ProtectedPrefix + id + "-"
	if i := slices.IndexFunc(children, func(n string) bool { return strings.HasPrefix(n, prefix) }); i >= 0 {
		return dir + "/" + children[i]
	}
	return ""
}

// findProtectedNode is findProtectedNodeInForeground: the child of dir
// whose name starts with the protected prefix, within the retry loop; a
// missing dir is no node.
func (c *curator2Client) findProtectedNode(ctx context.Context, dir, id string) (string, error) {
	var found string
	err := c.callWithRetry(ctx, func() error {
		children, _, err := c.conn.Children(dir)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		found = protectedChild(dir, children, id)
		return nil
	})
	return found, err
}

// findAndDeleteProtectedNode is FindAndDeleteProtectedNodeInBackground:
// a background listing, retried while the client is not closed, and the
// guaranteed delete of the node it finds.
func (c *curator2Client) findAndDeleteProtectedNode(dir, id string) {
	for c.started() {
		found, err := c.findProtectedNode(context.Background(), dir, id)
		if err == nil {
			if found != "" {
				_ = c.deleteGuaranteed(context.Background(), found)
			}
			return
		}
		time.Sleep(curator2RetrySleep)
	}
}

// mkdirs is ZKPaths.mkdirs(zk, path, makeLastNode true): each missing
// ancestor and dir itself, persistent, a NodeExists taken for success.
func (c *curator2Client) mkdirs(dir string) error { return curatorMkdirs(c.conn, dir) }

// deleteGuaranteed is client.delete().guaranteed().forPath(path): the
// delete in the retry loop and, if that fails with connection loss, the
// same delete again in the background until it goes through
// (FailedDeleteManager.addFailedDelete, whose background delete adds
// itself again whenever its retries run out), while the client is not
// closed.
// The failure is returned all the same.
func (c *curator2Client) deleteGuaranteed(ctx context.Context, path string) error {
	err := c.callWithRetry(ctx, func() error { return c.conn.Delete(path, -1) })
	if err != nil && (curator2ShouldRetry(err) || errors.Is(err, errCurator2Interrupted)) {
		go c.deleteInBackground(path)
	}
	return err
}

// deleteInBackground is the guaranteed delete's background operation:
// tried until it succeeds or finds the node gone, while the client is
// started.
func (c *curator2Client) deleteInBackground(path string) {
	for c.started() {
		err := c.callWithRetry(context.Background(), func() error { return c.conn.Delete(path, -1) })
		if err == nil || errors.Is(err, zk.ErrNoNode) || !curator2ShouldRetry(err) {
			return
		}
	}
}

// curator2UUID is UUID.randomUUID() as the protected prefix uses it.
func curator2UUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
