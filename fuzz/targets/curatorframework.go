package targets

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// curatorFramework is as much of Curator's CuratorFramework as the ports
// of Curator's background recipes call, over a zktest.Conn: its event
// thread, on which watchers, background callbacks and connection-state
// listeners run one at a time; background operations under its RetryLoop;
// and its connection states from the session's events.
type curatorFramework struct {
	ctx  context.Context
	conn zktest.Conn
	// thread is the event thread's queue.
	thread    chan func()
	listeners []func(curatorState)
	state     curatorState
	// injectExpiry is ConnectionStateManager's injected session
	// expiration (Curator 3.0 on), which only the ports that ask for it
	// have (newCuratorFrameworkInjecting): once the state has been
	// SUSPENDED for the negotiated session timeout, the client gives its
	// session up on its own (checkSessionExpiration), as handling says.
	// suspended numbers the SUSPENDED spells, so that the clock of one
	// that ended stops.
	injectExpiry bool
	handling     curatorHandling
	suspended    int
}

// curatorHandling is the client's ConnectionHandlingPolicy as
// ConnectionStateManager reads it.
type curatorHandling struct {
	// expirationPercent is StandardConnectionHandlingPolicy's
	// expirationPercent: the share of the negotiated session timeout a
	// SUSPENDED spell lasts before Curator injects the expiration. 0 is
	// the default policy's 100.
	expirationPercent int
	// pollIgnoresPercent is ConnectionStateManager.processEvents before
	// CURATOR-460's fix (4.0.1 and earlier): the state thread's queue
	// poll waits for the whole negotiated timeout from the start of the
	// spell, and checkSessionExpiration runs only when it times out, so
	// the injection comes at 100% whatever the percent.
	pollIgnoresPercent bool
}

// wait is how long into a SUSPENDED spell the state thread checks it,
// and injects the expiration, given the negotiated timeout.
func (h curatorHandling) wait(timeout time.Duration) time.Duration {
	if h.expirationPercent == 0 || h.pollIgnoresPercent {
		return timeout
	}
	return timeout * time.Duration(h.expirationPercent) / 100
}

// curatorState is Curator's ConnectionState.
type curatorState int

const (
	curatorConnected curatorState = iota
	curatorSuspended
	curatorReconnected
	curatorLost
)

// newCuratorFramework starts the framework's event thread and follows
// the session's events until ctx ends.
func newCuratorFramework(ctx context.Context, conn zktest.Conn, events <-chan zk.Event) *curatorFramework {
	return (&curatorFramework{ctx: ctx, conn: conn, thread: make(chan func(), 64)}).start(events)
}

// newCuratorFrameworkInjecting is newCuratorFramework with
// ConnectionStateManager's injected session expiration (see injectExpiry),
// under the connection handling policy h.
func newCuratorFrameworkInjecting(ctx context.Context, conn zktest.Conn, events <-chan zk.Event, h curatorHandling) *curatorFramework {
	return (&curatorFramework{ctx: ctx, conn: conn, thread: make(chan func(), 64), injectExpiry: true, handling: h}).start(events)
}

// start starts the event thread and the follower of the session's events.
func (f *curatorFramework) start(events <-chan zk.Event) *curatorFramework {
	go func() {
		for {
			select {
			case fn := <-f.thread:
				fn()
			case <-f.ctx.Done():
				return
			}
		}
	}()
	go func() {
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					return
				}
				if ev.Type == zk.EventSession {
					f.run(func() { f.sessionEvent(ev.State) })
				}
			case <-f.ctx.Done():
				return
			}
		}
	}()
	return f
}

// run queues fn on the event thread, unless the process has ended.
func (f *curatorFramework) run(fn func()) {
	select {
	case f.thread <- fn:
	case <-f.ctx.Done():
	}
}

// sessionEvent is ConnectionStateManager: SUSPENDED when the connection
// is lost, LOST when the session expires, RECONNECTED when a session is
// had again; it tells the listeners of a change.
func (f *curatorFramework) sessionEvent(s zk.State) {
	next := f.state
	switch s {
	case zk.StateDisconnected:
		if f.state != curatorLost {
			next = curatorSuspended
		}
	case zk.StateExpired:
		next = curatorLost
	case zk.StateHasSession:
		if f.state == curatorSuspended || f.state == curatorLost {
			next = curatorReconnected
		}
	}
	if next == f.state {
		return
	}
	f.state = next
	if f.injectExpiry && next == curatorSuspended {
		f.checkSessionExpiration()
	}
	for _, l := range f.listeners {
		l(next)
	}
}

// addListener adds a connection-state listener; call it on the event
// thread, or before any event can come.
func (f *curatorFramework) addListener(l func(curatorState)) { f.listeners = append(f.listeners, l) }

// curatorRetries is ExponentialBackoffRetry(1000, 3), the policy Curator's
// documentation starts with: three retries, after a second, two, four.
// (Curator adds a random jitter; the port sleeps the nominal time, so
// that a case replays the same.)
const curatorRetries = 3

// retry is RetryLoop.callWithRetry: op again after a connection loss,
// while the policy allows.
func (f *curatorFramework) retry(op func() error) error {
	for n := 0; ; n++ {
		err := op()
		if err == nil || !recipe.IsConnectionLoss(err) || n == curatorRetries {
			return err
		}
		time.Sleep(time.Second<<n + threadWakeSkew)
	}
}

// background is an operation's inBackground(callback): op runs under the
// retry loop, off the caller's goroutine, and callback gets its result on
// the event thread.
func (f *curatorFramework) background(op func() error, callback func(error)) {
	go func() {
		err := f.retry(op)
		if callback != nil {
			f.run(func() { callback(err) })
		}
	}()
}

// watch hands ch's event, when it comes, to watcher on the event thread.
func (f *curatorFramework) watch(ch <-chan zk.Event, watcher func(zk.Event)) {
	go func() {
		if ev, ok := <-ch; ok {
			f.run(func() { watcher(ev) })
		}
	}()
}

// checkSessionExpiration is ConnectionStateManager.checkSessionExpiration
// (Curator 5.x, and 3.0 on) for the SUSPENDED spell that begins now: once
// it has lasted the session timeout the server negotiated (the handling
// policy's share of it, see curatorHandling), the client
// injects a session expiration, giving its session up on its side alone
// (the Conn's AbandonSession): the Expired event that follows makes LOST,
// and the new session RECONNECTED, through sessionEvent. The server,
// which no closeSession reached, keeps the old session and its ephemeral
// nodes until it expires it. The clock starts again after an injection
// (CURATOR-405), in case the expiry did not reach the state. Curator's
// state thread, whose queue poll times out at the session timeout, is the
// timer's goroutine here; the injection itself runs on the event thread,
// which is also the thread that tells the listeners, as Curator's is. It
// ends with the process (ctx), and a Conn that cannot give its session up
// (over real clients) injects nothing.
func (f *curatorFramework) checkSessionExpiration() {
	a, ok := f.conn.(sessionAbandoner)
	if !ok {
		return
	}
	f.suspended++
	spell := f.suspended
	go func() {
		for {
			timeout := a.SessionTimeout()
			if timeout <= 0 {
				return
			}
			select {
			case <-time.After(f.handling.wait(timeout)):
			case <-f.ctx.Done():
				return
			}
			still := make(chan bool, 1)
			f.run(func() {
				on := f.state == curatorSuspended && f.suspended == spell
				if on {
					// log.warn("Session timeout has elapsed while
					// SUSPENDED. Injecting a session expiration.")
					a.AbandonSession()
				}
				still <- on
			})
			select {
			case on := <-still:
				if !on {
					return
				}
			case <-f.ctx.Done():
				return
			}
		}
	}()
}
