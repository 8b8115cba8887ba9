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
	f := &curatorFramework{ctx: ctx, conn: conn, thread: make(chan func(), 64)}
	go func() {
		for {
			select {
			case fn := <-f.thread:
				fn()
			case <-ctx.Done():
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
			case <-ctx.Done():
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
		time.Sleep(time.Second << n)
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
