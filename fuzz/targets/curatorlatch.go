package targets

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// This file is Curator's LeaderLatch (curator-recipes,
// leader/LeaderLatch.java) in the three versions the catalogue holds. The
// part of curator-framework it stands on beyond curatorframework.go is
// curatorcreate.go's: the background protected create
// (CreateBuilderImpl.pathInBackground with withProtection and
// creatingParentContainersIfNeeded, as CuratorFrameworkImpl's background
// loop runs it; its findProtectedNodeInForeground under the foreground
// RetryLoop; ProtectedMode from 4.2.0 on;
// FindAndDeleteProtectedNodeInBackground), and the guaranteed delete
// (DeleteBuilderImpl guaranteed, FailedDeleteManager).
//
//   - curatorLatch4 is LeaderLatch as in Curator 4.1.0 (the last release
//     before CURATOR-498's fix, 4.2.0): RECONNECTED resets the latch
//     (deletes its node and makes a new one), and the protected create
//     takes any node of its protected id that a retry finds.
//   - curatorLatch53 is LeaderLatch as in Curator 5.3.0 (the last release
//     before CURATOR-653's fix, 9b3a1453, 5.4.0): 4.1.0's latch, whose
//     protected create has CURATOR-498's fix (ProtectedMode, 4.2.0), and
//     whose checkLeadership keeps its leadership when its node is not
//     first; lastPathIsLeader is CURATOR-537's (f1f9d5f8, 5.3.0).
//   - curatorLatch5 is LeaderLatch as at 3468ee91 (2023-09, released in
//     5.6.0), the last change before CURATOR-696's fix (1027c2cd, 5.7.0):
//     RECONNECTED lists the children again (CURATOR-644/645, 4b96f18b,
//     5.4.0) and takes leadership if its node is first; ProtectedMode
//     ignores an old session's node; checkLeadership gives leadership up
//     when its node is not first (CURATOR-653, 9b3a1453, 5.4.0) and keeps
//     lastPathIsLeader (CURATOR-537, f1f9d5f8, 5.3.0).
//
// They differ where upstream's code did, behind the flags of
// curatorLatchVersion. Left out: the participant queries (getLeader,
// getParticipants), CloseMode.NOTIFY_LEADER (the latch is closed SILENT,
// its default), the debug latches, namespaces and compression. The parents are made
// persistent, not containers, as Curator makes them in its ZooKeeper 3.4
// compatibility mode: the harness's server reaps an empty container after
// a minute, and a latch whose listing then finds its path gone does
// nothing again (CURATOR-724, another bug, fixed in 5.8.0 by dd679362).
// It still meets it when the path was never made: a latch whose first
// create gave up during an outage lists a missing path on RECONNECTED,
// and waits for ever (a liveness finding). WatcherRemoveCuratorFramework
// .removeWatchers, which Curator calls on close, cannot remove a watch
// the server holds over go-zookeeper's API: a closed latch's watch stays
// armed, and its watcher does nothing.
//
// Java's threads are the framework's: the event thread runs the
// connection-state listener, the background callbacks and the watchers
// one at a time (Curator runs its state listeners on a thread of their
// own); the background operations retry on goroutines of their own, as
// AfterConnectionEstablished's task runs on one; the latch's synchronized
// methods hold its monitor (monitor.go); its atomics are Go's.

// curatorLatchVersion selects what differs between the ports' versions.
type curatorLatchVersion struct {
	// resetOnReconnect: RECONNECTED calls reset(), and a watched node
	// found gone resets too (4.1.0 to 5.3.0). Off: the code of 5.4.0 on
	// (CURATOR-644/645, 4b96f18b), which lists the children again.
	resetOnReconnect bool
	// notFirstGivesUp is CURATOR-653's fix (9b3a1453, 5.4.0):
	// checkLeadership gives leadership up when its node is not first,
	// where before it only watched the node ahead and kept what it had.
	notFirstGivesUp bool
	// protectedSession is CURATOR-498's fix (4.2.0, ProtectedMode): a
	// protected ephemeral create remembers its session, and a node a
	// retry finds once the session has changed is deleted, not taken.
	protectedSession bool
	// checkOwner is CURATOR-696's fix (1027c2cd, 5.7.0): a latch whose
	// node is first reads the node, and leads only if its ephemeral owner
	// is the session the client has now; otherwise it resets.
	checkOwner bool

	// How the latch's client is built, which its user chooses:
	// sessionErrorPolicy is SessionConnectionStateErrorPolicy (only LOST
	// is an error state: the latch keeps its leadership while SUSPENDED,
	// and on RECONNECTED resets only if it does not lead), where the
	// default, StandardConnectionStateErrorPolicy, makes SUSPENDED an
	// error too; handling is the ConnectionHandlingPolicy, and the
	// ConnectionStateManager's version, that decide when a SUSPENDED
	// spell turns LOST.
	sessionErrorPolicy bool
	handling           curatorHandling
}

// curatorLatch4 is LeaderLatch as in Curator 4.1.0.
var curatorLatch4 = curatorLatchVersion{resetOnReconnect: true}

// curatorLatch53 is LeaderLatch as in Curator 5.3.0, the last release
// before CURATOR-653's fix: 4.1.0's latch with CURATOR-498's fix.
var curatorLatch53 = curatorLatchVersion{resetOnReconnect: true, protectedSession: true}

// curatorLatch5 is LeaderLatch as at 3468ee91, before CURATOR-696's fix.
var curatorLatch5 = curatorLatchVersion{protectedSession: true, notFirstGivesUp: true}

// Curator's defaults, as CuratorFrameworkFactory has them.
const (
	// curatorConnectionTimeout is the default connection timeout: how
	// long a background operation waits for the connection before it
	// counts a retry (CuratorFrameworkImpl.performBackgroundOperation),
	// and each try of the foreground RetryLoop waits for it
	// (CuratorZookeeperClient.internalBlockUntilConnectedOrTimedOut).
	curatorConnectionTimeout = 15 * time.Second
	// curatorPoll is how often a wait for the connection looks at the
	// Conn's state, where Curator's latch wakes at the connection event.
	curatorPoll = 100 * time.Millisecond
	// curatorLatchLockName is LeaderLatch's LOCK_NAME.
	curatorLatchLockName = "latch-"
)

// The latch's State.
const (
	latchLatent int32 = iota
	latchStarted
	latchClosed
)

var (
	// errLatchInterrupted is Java's InterruptedException: the call's ctx
	// was done while await waited.
	errLatchInterrupted = errors.New("java.lang.InterruptedException")
	// errLatchEOF is the EOFException await throws once the latch is
	// closed.
	errLatchEOF = errors.New("java.io.EOFException")
)

// curatorLatch is a LeaderLatch on a process's CuratorFramework.
type curatorLatch struct {
	f         *curatorFramework
	v         curatorLatchVersion
	latchPath string
	id        string
	mon       *monitor // the latch's own monitor: its synchronized methods

	state            atomic.Int32
	hasLeadership    atomic.Bool
	ourPath          atomic.Pointer[string]
	lastPathIsLeader atomic.Pointer[string]
	// startTask is AfterConnectionEstablished's future: closed to cancel.
	startTask atomic.Pointer[chan struct{}]
	// listenerRemoved is removeListener of its connection-state listener:
	// the framework keeps its listeners, and a removed one does nothing.
	listenerRemoved atomic.Bool
	// listener is the LeaderLatchListener its user added: isLeader
	// (true) and notLeader (false), called as setLeadership changes.
	listener func(isLeader bool)
	// uuids counts the protected ids the process drew.
	uuids *atomic.Uint64
}

// newCuratorLatch is new LeaderLatch(client, latchPath, id), with a
// LeaderLatchListener; uuids is the process's count of protected ids.
func newCuratorLatch(f *curatorFramework, v curatorLatchVersion, latchPath, id string, listener func(isLeader bool), uuids *atomic.Uint64) *curatorLatch {
	return &curatorLatch{f: f, v: v, latchPath: latchPath, id: id, mon: newMonitor(), listener: listener, uuids: uuids}
}

// path reads an AtomicReference<String>: "" for null.
func (l *curatorLatch) path(p *atomic.Pointer[string]) string {
	if s := p.Load(); s != nil {
		return *s
	}
	return ""
}

// start is start(): the latch joins the election once the connection is
// established (AfterConnectionEstablished.execute runs internalStart on
// a thread of its own after client.blockUntilConnected()).
func (l *curatorLatch) start() error {
	if !l.state.CompareAndSwap(latchLatent, latchStarted) {
		return errors.New("java.lang.IllegalStateException: Cannot be started more than once")
	}
	cancel := make(chan struct{})
	l.startTask.Store(&cancel)
	go func() {
		for l.f.conn.State() != zk.StateHasSession {
			select {
			case <-time.After(curatorPoll + threadWakeSkew):
			case <-cancel:
				return
			case <-l.f.ctx.Done():
				return
			}
		}
		l.f.run(func() {
			select {
			case <-cancel:
				return
			default:
			}
			l.internalStart()
			l.startTask.CompareAndSwap(&cancel, nil)
		})
	}()
	return nil
}

// cancelStartTask cancels the start task if it has not run.
func (l *curatorLatch) cancelStartTask() {
	if c := l.startTask.Swap(nil); c != nil {
		close(*c)
	}
}

// internalStart is synchronized internalStart(): the state listener, then
// reset(). It runs on the event thread, where the framework's listeners
// may be added. Java's monitor is reentrant and this one is not: reset,
// whose setLeadership takes the monitor, runs once it is let go; a close
// that comes in between finds the create under way, as one that comes
// after does (its callback deletes the node of a closed latch).
func (l *curatorLatch) internalStart() {
	l.mon.enter()
	started := l.state.Load() == latchStarted
	if started {
		l.f.addListener(func(s curatorState) {
			if !l.listenerRemoved.Load() {
				l.handleStateChange(s)
			}
		})
	}
	l.mon.exit()
	if started {
		l.reset()
	}
}

// close is close(), CloseMode.SILENT: internalClose(closeMode, true).
func (l *curatorLatch) close() error {
	l.mon.enter()
	defer l.mon.exit()
	if !l.state.CompareAndSwap(latchStarted, latchClosed) {
		return errors.New("java.lang.IllegalStateException: Already closed or has not been started")
	}
	l.cancelStartTask()
	l.setNode("")
	// finally: removeListener; SILENT: listeners.clear(), then
	// setLeadership(false), which then tells no one.
	l.listenerRemoved.Store(true)
	l.setLeadershipLocked(false, false)
	return nil
}

// await is await(): until the latch leads, its caller is interrupted
// (ctx), or it is closed (EOFException).
func (l *curatorLatch) await(ctx context.Context) error {
	l.mon.enter()
	for l.state.Load() == latchStarted && !l.hasLeadership.Load() {
		if err := l.mon.wait(ctx, 0); err != nil {
			l.mon.exit()
			return errLatchInterrupted
		}
	}
	l.mon.exit()
	if l.state.Load() != latchStarted {
		return errLatchEOF
	}
	return nil
}

// awaitTimeout is await(timeout, unit), in its form of 4.2.0 on (eada598f,
// CURATOR-498's branch): 4.1.0's loop waits while the time lasts and the
// latch is started and not leading, then returns hasLeadership(), which
// comes to the same.
func (l *curatorLatch) awaitTimeout(ctx context.Context, timeout time.Duration) (bool, error) {
	l.mon.enter()
	defer l.mon.exit()
	for {
		if l.state.Load() != latchStarted {
			return false, nil
		}
		if l.leads() {
			return true, nil
		}
		if timeout <= 0 {
			return false, nil
		}
		start := time.Now()
		if err := l.mon.wait(ctx, timeout); err != nil {
			return false, errLatchInterrupted
		}
		timeout -= time.Since(start)
	}
}

// leaderNode is the node the latch leads, or last led, through:
// getLastPathIsLeader() (CURATOR-537).
func (l *curatorLatch) leaderNode() string { return l.path(&l.lastPathIsLeader) }

// leads is hasLeadership().
func (l *curatorLatch) leads() bool {
	return l.state.Load() == latchStarted && l.hasLeadership.Load()
}

// reset is reset(): leadership given up, the node deleted, and a new one
// made by a background protected create whose callback takes it and
// lists the children.
func (l *curatorLatch) reset() {
	l.setLeadership(false)
	l.setNode("")
	l.createProtected(l.latchPath+"/"+curatorLatchLockName, []byte(l.id), func(name string, err error) {
		if err != nil {
			// log.error("getChildren() failed. rc = " + rc)
			return
		}
		l.setNode(name)
		if l.state.Load() == latchClosed {
			l.setNode("")
		} else {
			l.getChildren()
		}
	})
}

// checkLeadership is checkLeadership(children), on the event thread.
func (l *curatorLatch) checkLeadership(children []string) {
	localOurPath := l.path(&l.ourPath)
	sorted := sortLatchChildren(children)
	ourIndex := -1
	if localOurPath != "" {
		ourIndex = slices.Index(sorted, localOurPath[strings.LastIndexByte(localOurPath, '/')+1:])
	}
	switch {
	case ourIndex < 0:
		// log.error("Can't find our node. Resetting. Index: " + ourIndex)
		l.reset()
	case ourIndex == 0 && l.v.checkOwner:
		// CURATOR-696's fix: lead only on a node of this session.
		var owner int64 = -1 // event.getStat() is null on a failure
		l.f.background(func() error {
			_, st, err := l.f.conn.Get(localOurPath)
			if err == nil {
				owner = st.EphemeralOwner
			}
			return err
		}, func(error) {
			if owner != l.f.conn.SessionID() {
				// this node is gone - reset
				l.reset()
				return
			}
			l.lastPathIsLeader.Store(&localOurPath)
			l.setLeadership(true)
		})
	case ourIndex == 0:
		// lastPathIsLeader is CURATOR-537's (5.3.0); 4.1.0 has none. The
		// port keeps it in every version: the target reads it (the node the latch
		// led through last), and nothing the latch does reads it.
		l.lastPathIsLeader.Store(&localOurPath)
		l.setLeadership(true)
	default:
		if l.v.notFirstGivesUp {
			l.setLeadership(false) // CURATOR-653
		}
		watchPath := l.latchPath + "/" + sorted[ourIndex-1]
		watcher := func(ev zk.Event) {
			if l.state.Load() == latchStarted && ev.Type == zk.EventNodeDeleted {
				l.getChildren()
			}
		}
		// use getData() instead of exists() to avoid leaving unneeded
		// watchers which is a type of resource leak
		l.f.background(func() error {
			_, _, ch, err := l.f.conn.GetW(watchPath)
			if err == nil {
				l.f.watch(ch, watcher)
			}
			return err
		}, func(err error) {
			if errors.Is(err, zk.ErrNoNode) {
				if l.v.resetOnReconnect {
					// previous node is gone - reset
					l.reset()
				} else {
					// previous node is gone - retry getChildren
					l.getChildren()
				}
			}
		})
	}
}

// getChildren is getChildren(): the children listed in the background,
// checkLeadership on them.
func (l *curatorLatch) getChildren() {
	var children []string
	l.f.background(func() (err error) {
		children, _, err = l.f.conn.Children(l.latchPath)
		return err
	}, func(err error) {
		if err == nil {
			l.checkLeadership(children)
		}
	})
}

// handleStateChange is the latch's ConnectionStateListener, on the event
// thread, under its client's error policy.
func (l *curatorLatch) handleStateChange(s curatorState) {
	// isErrorState(SUSPENDED): under the standard policy.
	suspendedIsError := !l.v.sessionErrorPolicy
	switch s {
	case curatorReconnected:
		if !suspendedIsError && l.hasLeadership.Load() {
			return
		}
		if l.v.resetOnReconnect {
			l.reset()
		} else {
			l.getChildren()
		}
	case curatorSuspended:
		if suspendedIsError {
			l.setLeadership(false)
		}
	case curatorLost:
		l.setLeadership(false)
	}
}

// setLeadership is synchronized setLeadership(newValue): the listener
// hears of a change; waiters are notified.
func (l *curatorLatch) setLeadership(v bool) {
	l.mon.enter()
	defer l.mon.exit()
	l.setLeadershipLocked(v, true)
}

func (l *curatorLatch) setLeadershipLocked(v, tell bool) {
	old := l.hasLeadership.Swap(v)
	if tell && old != v && l.listener != nil {
		l.listener(v)
	}
	l.mon.notifyAll()
}

// setNode is setNode(newValue): the node it had is deleted, guaranteed,
// in the background.
func (l *curatorLatch) setNode(p string) {
	var old *string
	if p == "" {
		old = l.ourPath.Swap(nil)
	} else {
		old = l.ourPath.Swap(&p)
	}
	if old != nil {
		deleteGuaranteedInBackground(l.f, *old)
	}
}

// sortLatchChildren is LockInternals.getSortedChildren(LOCK_NAME, sorter,
// children): sorted by the text after the last "latch-"
// (standardFixForSorting), stably.
func sortLatchChildren(children []string) []string {
	fix := func(s string) string {
		if i := strings.LastIndex(s, curatorLatchLockName); i >= 0 {
			return s[i+len(curatorLatchLockName):]
		}
		return s
	}
	sorted := slices.Clone(children)
	slices.SortStableFunc(sorted, func(a, b string) int { return strings.Compare(fix(a), fix(b)) })
	return sorted
}

// latchToken is the fencing token of a latch node: its sequence number
// (CURATOR-537 made the node's path the documented token), plus one, as
// the harness's fenced resource and the election model read 0 as no
// token and the first node's sequence number is 0; 0 for none.
func latchToken(node string) int64 {
	i := strings.LastIndex(node, curatorLatchLockName)
	if i < 0 {
		return 0
	}
	n, err := strconv.ParseInt(node[i+len(curatorLatchLockName):], 10, 64)
	if err != nil {
		return 0
	}
	return n + 1
}
