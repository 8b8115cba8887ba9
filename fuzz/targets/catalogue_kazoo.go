package targets

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// kazooBugs lists the catalogue's kazoo bugs, one file each.
func kazooBugs() []KnownBug {
	return []KnownBug{kazoo730(), kazoo732(), kazoo649(), kazoo429(), kazoo170(), kazoo490()}
}

// The rest of this file is what every kazoo port stands on: as much of
// kazoo's KazooClient (kazoo/client.py) and KazooRetry (kazoo/retry.py)
// as the recipes call, over a zktest.Conn. Python's exceptions are Go
// errors: go-zookeeper's connection loss (recipe.IsConnectionLoss) for
// ConnectionLoss, zk.ErrSessionExpired for SessionExpiredError, zk.ErrNoNode
// for NoNodeError, and so on; every error a port sees is a KazooException
// but errForceRetry, which kazoo keeps apart (ForceRetryError is a plain
// Exception).

var (
	// errForceRetry is kazoo.retry.ForceRetryError: recipe logic asking
	// its KazooRetry to run it again.
	errForceRetry = errors.New("kazoo: ForceRetryError")
	// errRetryFailed is kazoo.retry.RetryFailedError: the retry's
	// deadline or tries are spent.
	errRetryFailed = errors.New("kazoo: RetryFailedError")
	// errCancelled is kazoo.exceptions.CancelledError, and errLockTimeout
	// kazoo.exceptions.LockTimeout.
	errCancelled   = errors.New("kazoo: CancelledError")
	errLockTimeout = errors.New("kazoo: LockTimeout")
)

// kazooException reports whether err is one Python would catch with
// "except KazooException": any error of the client's or a recipe's but
// ForceRetryError.
func kazooException(err error) bool { return err != nil && !errors.Is(err, errForceRetry) }

// kazooRetry is KazooRetry (kazoo 2.x, kazoo/retry.py): it calls a
// function again after ConnectionLoss, OperationTimeout, ForceRetryError
// and (ignore_expire, the default) SessionExpiredError, sleeping delay,
// then twice that, up to maxDelay; maxTries 0 is Python's None, no limit;
// a deadline ends the retries with RetryFailedError once the next sleep
// would pass it. kazoo draws a jitter of ±40% for each sleep: the port
// sleeps the nominal delay, so that a case replays the same.
type kazooRetry struct {
	// client is the client whose requests op makes: a sleep between
	// tries ends early once it is closed, so that the process can end
	// (kazoo's thread would sleep on, to find its next request raise
	// ConnectionClosedError, as the port's next request then does).
	client   *kazooClient
	maxTries int
	delay    time.Duration
	maxDelay time.Duration
	deadline time.Duration // 0: none
}

// lockRetry is the KazooRetry a Lock makes for itself:
// KazooRetry(max_tries=None), whose max_delay is 60 s.
func lockRetry(client *kazooClient) kazooRetry {
	return kazooRetry{client: client, delay: 100 * time.Millisecond, maxDelay: time.Minute}
}

// commandRetry is KazooClient.retry as a client made with no retry
// settings has it: no limit on tries, max_delay 3600 s.
func commandRetry(client *kazooClient) kazooRetry {
	return kazooRetry{client: client, delay: 100 * time.Millisecond, maxDelay: time.Hour}
}

// retryable is KazooRetry's retry_exceptions with ignore_expire.
func retryable(err error) bool {
	return errors.Is(err, errForceRetry) || recipe.IsConnectionLoss(err) || errors.Is(err, zk.ErrSessionExpired)
}

// call is KazooRetry.__call__.
func (r kazooRetry) call(op func() error) error {
	attempts, delay := 0, r.delay
	var stop time.Time
	if r.deadline > 0 {
		stop = time.Now().Add(r.deadline)
	}
	for {
		err := op()
		if err == nil || errors.Is(err, zk.ErrClosing) || !retryable(err) {
			return err
		}
		attempts++
		if attempts == r.maxTries {
			return fmt.Errorf("%w: too many retry attempts", errRetryFailed)
		}
		if !stop.IsZero() && !time.Now().Add(delay).Before(stop) {
			return fmt.Errorf("%w: exceeded retry deadline", errRetryFailed)
		}
		r.sleep(delay)
		delay = min(delay*2, r.maxDelay)
	}
}

// sleep sleeps d, in steps of a second at most, until the client is
// closed.
func (r kazooRetry) sleep(d time.Duration) {
	for d > 0 && (r.client == nil || !r.client.pollClosed()) {
		step := min(d, time.Second)
		time.Sleep(step)
		d -= step
	}
}

// kazooState is KazooState, the state a KazooClient's listeners hear.
type kazooState int

const (
	kazooConnected kazooState = iota
	kazooSuspended
	kazooLost
)

func (s kazooState) String() string {
	return [...]string{"CONNECTED", "SUSPENDED", "LOST"}[s]
}

// kazooClient is as much of KazooClient as the ports use. kazoo learns of
// its connection from its own socket; over a Conn the port learns it
// from what requests return and from the Conn's State and SessionID,
// read before each request and, while a recipe waits on an event, every
// 100 ms (recipe.Mutex polls the same way): a connection loss makes the
// client SUSPENDED, a new session LOST, and a connection again CONNECTED,
// and its listeners hear each. What kazoo does with its watchers when the
// connection goes is the version's (droppedSilently).
type kazooClient struct {
	conn zktest.Conn
	// droppedSilently: kazoo before 2.3.0 (_reset_watchers) forgets every
	// watcher at a connection loss, and none ever fires; from 2.3.0
	// (python-zk/kazoo 92b4dba) it calls each once with a NONE event as
	// it forgets it.
	droppedSilently bool
	// failWhileConnecting: kazoo before 2.7.0 (python-zk/kazoo#588)
	// fails a request made while the client reconnects (KeeperState
	// CONNECTING) with SessionExpiredError at once, without sending it
	// (KazooClient._call).
	failWhileConnecting bool

	mu        sync.Mutex
	state     kazooState
	session   int64
	watchers  map[*kazooWatcher]bool
	listeners map[int]func(kazooState)
	nextID    int
	prefixes  int
	// closed: the Conn was closed, as far as the client can tell (see
	// request); suspect and strikes weigh the evidence.
	closed  bool
	suspect time.Time
	strikes int
}

// kazooWatcher is a watch function kazoo holds for a node.
type kazooWatcher struct{ fn func(zk.Event) }

func newKazooClient(conn zktest.Conn, droppedSilently bool) *kazooClient {
	return &kazooClient{conn: conn, droppedSilently: droppedSilently, session: conn.SessionID(),
		watchers: map[*kazooWatcher]bool{}, listeners: map[int]func(kazooState){}}
}

// observe brings the client's state up to the Conn's; lost says a
// request just failed with a connection loss (kazoo fails its pending
// requests so as it goes SUSPENDED).
func (c *kazooClient) observe(lost bool) {
	state, session := c.conn.State(), c.conn.SessionID()
	c.mu.Lock()
	var heard []kazooState
	var fire []func(zk.Event)
	drop := func() {
		for w := range c.watchers {
			if !c.droppedSilently {
				fire = append(fire, w.fn)
			}
			delete(c.watchers, w)
		}
	}
	switch {
	case session != 0 && c.session != 0 && session != c.session:
		// The old session expired and the Conn made a new one: LOST,
		// then CONNECTED (kazoo's _session_callback and _reset).
		drop()
		heard = append(heard, kazooLost, kazooConnected)
		c.state = kazooConnected
	case (lost || state != zk.StateHasSession) && c.state == kazooConnected:
		drop()
		heard = append(heard, kazooSuspended)
		c.state = kazooSuspended
	case state == zk.StateHasSession && c.state != kazooConnected:
		heard = append(heard, kazooConnected)
		c.state = kazooConnected
	}
	if session != 0 {
		c.session = session
	}
	var listeners []func(kazooState)
	for _, l := range c.listeners {
		listeners = append(listeners, l)
	}
	c.mu.Unlock()
	for _, fn := range fire {
		fn(zk.Event{Type: zk.EventNotWatching, State: state})
	}
	for _, s := range heard {
		for _, l := range listeners {
			l(s)
		}
	}
}

// request runs a request, with the client's state observed before and
// after it. A kazoo client that was closed fails every request with
// ConnectionClosedError, which KazooRetry does not retry; a closed Conn
// fails them with go-zookeeper's connection loss, as a lost connection
// does, but stays StateDisconnected where a lost one moves on to
// reconnect (recipe/closed.go weighs the same evidence). So a request
// that finds the Conn still disconnected at least 100 ms after a
// connection loss, twice in a row, finds it closed, and the client raises
// ConnectionClosedError (zk.ErrClosing) from then on.
func (c *kazooClient) request(op func() error) error {
	c.mu.Lock()
	if !c.suspect.IsZero() && time.Since(c.suspect) >= kazooPoll {
		c.suspect = time.Time{}
		c.strike()
	}
	c.mu.Unlock()
	if c.isClosed() {
		return fmt.Errorf("kazoo: ConnectionClosedError: %w", zk.ErrClosing)
	}
	c.observe(false)
	if c.failWhileConnecting && c.conn.State() != zk.StateHasSession {
		// Not sent: the Conn's state is the only evidence of a close.
		c.mu.Lock()
		if c.suspect.IsZero() {
			c.suspect = time.Now()
		}
		c.mu.Unlock()
		return fmt.Errorf("kazoo: request made while CONNECTING: %w", zk.ErrSessionExpired)
	}
	err := op()
	c.mu.Lock()
	switch {
	case errors.Is(err, zk.ErrClosing):
		c.strikes = 2 // proof: go-zookeeper's Close failed it
	case errors.Is(err, zk.ErrConnectionClosed):
		c.suspect = time.Now()
	default:
		c.strikes = 0
	}
	c.mu.Unlock()
	c.observe(recipe.IsConnectionLoss(err))
	return err
}

// strike weighs the Conn's state as evidence that it was closed; called
// with mu held.
func (c *kazooClient) strike() {
	if c.conn.State() == zk.StateDisconnected {
		c.strikes++
	} else {
		c.strikes = 0
	}
}

// isClosed reports whether the client is closed, and the first time it
// finds it so tells its listeners LOST, as KazooClient.stop() does
// (_session_callback(CLOSED)): a waiting Lock wakes, and its next request
// raises ConnectionClosedError.
func (c *kazooClient) isClosed() bool {
	c.mu.Lock()
	if c.closed || c.strikes < 2 {
		defer c.mu.Unlock()
		return c.closed
	}
	c.closed = true
	var listeners []func(kazooState)
	for _, l := range c.listeners {
		listeners = append(listeners, l)
	}
	c.mu.Unlock()
	for _, l := range listeners {
		l(kazooLost)
	}
	return true
}

// stop is KazooClient.stop(), as the process calls it when it closes its
// client (fuzz.ClientCloser): the client is closed from now on, and its
// listeners hear LOST.
func (c *kazooClient) stop() {
	c.mu.Lock()
	c.strikes = 2
	c.mu.Unlock()
	c.isClosed()
}

// pollClosed weighs a waiter's poll as request weighs a failure: a Conn
// found StateDisconnected at two polls in a row was closed (a lost
// connection moves on to StateConnecting at once).
func (c *kazooClient) pollClosed() bool {
	c.mu.Lock()
	c.strike()
	c.mu.Unlock()
	return c.isClosed()
}

// addListener is KazooClient.add_listener; the id it returns is
// remove_listener's argument (Go's functions are not comparable).
func (c *kazooClient) addListener(fn func(kazooState)) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID++
	c.listeners[c.nextID] = fn
	return c.nextID
}

func (c *kazooClient) removeListener(id int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.listeners, id)
}

// newPrefix stands for uuid.uuid4().hex: 32 hex digits, unique to the
// client, drawn from its session and a count so that a case replays the
// same.
func (c *kazooClient) newPrefix() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prefixes++
	return fmt.Sprintf("%016x%016x", uint64(c.conn.SessionID()), uint64(c.prefixes))
}

// create is KazooClient.create (no makepath).
func (c *kazooClient) create(p string, data []byte, ephemeral, sequence bool) (string, error) {
	var flags int32
	if ephemeral {
		flags |= zk.FlagEphemeral
	}
	if sequence {
		flags |= zk.FlagSequence
	}
	var made string
	err := c.request(func() (err error) { made, err = c.conn.Create(p, data, flags, zktest.OpenACL); return err })
	return made, err
}

// delete is KazooClient.delete (version -1, no recursion).
func (c *kazooClient) delete(p string) error {
	return c.request(func() error { return c.conn.Delete(p, -1) })
}

// getChildren is KazooClient.get_children without a watch.
func (c *kazooClient) getChildren(p string) ([]string, error) {
	var names []string
	err := c.request(func() (err error) { names, _, err = c.conn.Children(p); return err })
	return names, err
}

// exists is KazooClient.exists, with a watch function when watch is set.
func (c *kazooClient) exists(p string, watch func(zk.Event)) (bool, error) {
	stat, err := c.existsStat(p, watch)
	return stat != nil, err
}

// existsStat is KazooClient.exists as it returns: the node's ZnodeStat,
// nil when it does not exist.
func (c *kazooClient) existsStat(p string, watch func(zk.Event)) (*zk.Stat, error) {
	var ok bool
	var stat *zk.Stat
	var ch <-chan zk.Event
	err := c.request(func() (err error) {
		if watch == nil {
			ok, stat, err = c.conn.Exists(p)
			return err
		}
		ok, stat, ch, err = c.conn.ExistsW(p)
		return err
	})
	if err == nil && watch != nil {
		c.follow(ch, watch)
	}
	if !ok {
		stat = nil
	}
	return stat, err
}

// get is KazooClient.get, with a watch function when watch is set.
func (c *kazooClient) get(p string, watch func(zk.Event)) ([]byte, error) {
	data, _, err := c.getStat(p, watch)
	return data, err
}

// getStat is KazooClient.get as it returns: the data and its ZnodeStat.
func (c *kazooClient) getStat(p string, watch func(zk.Event)) ([]byte, *zk.Stat, error) {
	var data []byte
	var stat *zk.Stat
	var ch <-chan zk.Event
	err := c.request(func() (err error) {
		if watch == nil {
			data, stat, err = c.conn.Get(p)
			return err
		}
		data, stat, ch, err = c.conn.GetW(p)
		return err
	})
	if err == nil && watch != nil {
		c.follow(ch, watch)
	}
	return data, stat, err
}

// listen has the client observe its Conn at each session event it hears
// on events, as kazoo's connection thread tells the listeners at once,
// until ctx ends: for a port that has the session's event channel (a
// fuzz.Recipe's Client.Events), where one over a bare Conn learns only at
// its requests and polls.
func (c *kazooClient) listen(ctx context.Context, events <-chan zk.Event) {
	go func() {
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					return
				}
				if ev.Type == zk.EventSession {
					c.observe(ev.State == zk.StateDisconnected)
				}
			case <-ctx.Done():
				return
			}
		}
	}()
}

// follow calls watch with the event the Conn delivers on ch, unless the
// client dropped the watcher meanwhile, at a connection loss (the Conn
// keeps its watches across a reconnection, kazoo did not) or with its
// session (go-zookeeper then sends EventNotWatching; kazoo, LOST, had
// already dropped or fired it).
func (c *kazooClient) follow(ch <-chan zk.Event, watch func(zk.Event)) {
	c.mu.Lock()
	w := &kazooWatcher{fn: watch}
	c.watchers[w] = true
	c.mu.Unlock()
	go func() {
		ev, ok := <-ch
		c.mu.Lock()
		live := c.watchers[w]
		delete(c.watchers, w)
		c.mu.Unlock()
		if ok && live && ev.Type != zk.EventNotWatching {
			watch(ev)
		}
	}()
}

// ensurePath is KazooClient.ensure_path: exists, else the parent's
// ensure_path and a create, NodeExists taken for success; not retried.
func (c *kazooClient) ensurePath(p string) error {
	_, err := c.ensurePathExisted(p)
	return err
}

// ensurePathExisted is ensure_path with what it returns: True (existed)
// when the node was there, or another's create won the race; the path it
// created otherwise.
func (c *kazooClient) ensurePathExisted(p string) (bool, error) {
	ok, err := c.exists(p, nil)
	if err != nil || ok {
		return ok, err
	}
	if parent := path.Dir(p); parent != "/" {
		if err := c.ensurePath(parent); err != nil {
			return false, err
		}
	}
	_, err = c.create(p, nil, false, false)
	if errors.Is(err, zk.ErrNodeExists) {
		return true, nil
	}
	return false, err
}

// set is KazooClient.set (version -1).
func (c *kazooClient) set(p string, data []byte) error {
	return c.request(func() error { _, err := c.conn.Set(p, data, -1); return err })
}

// getChildrenW is KazooClient.get_children with a watch function.
func (c *kazooClient) getChildrenW(p string, watch func(zk.Event)) ([]string, error) {
	var names []string
	var ch <-chan zk.Event
	err := c.request(func() (err error) { names, _, ch, err = c.conn.ChildrenW(p); return err })
	if err == nil {
		c.follow(ch, watch)
	}
	return names, err
}

// kazooEvent is threading.Event, the handler's event_object. A waiter
// polls its client's connection every 100 ms meanwhile: kazoo's
// connection thread would tell the listeners of a change at once.
type kazooEvent struct {
	mu  sync.Mutex
	ch  chan struct{}
	set bool
}

func newKazooEvent() *kazooEvent { return &kazooEvent{ch: make(chan struct{})} }

func (e *kazooEvent) Set() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.set {
		e.set = true
		close(e.ch)
	}
}

func (e *kazooEvent) Clear() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.set {
		e.set = false
		e.ch = make(chan struct{})
	}
}

func (e *kazooEvent) IsSet() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.set
}

// kazooPoll is how often a waiting port reads its Conn's state.
const kazooPoll = 100 * time.Millisecond

// Wait is Event.wait(timeout), timeout 0 meaning None; it returns
// whether the event is set.
func (e *kazooEvent) Wait(c *kazooClient, timeout time.Duration) bool {
	return e.WaitContext(context.Background(), c, timeout)
}

// WaitContext is Wait in a thread that ctx stops, as a process stops its
// consumer thread: it returns, the event unset, once ctx is done.
func (e *kazooEvent) WaitContext(ctx context.Context, c *kazooClient, timeout time.Duration) bool {
	e.mu.Lock()
	ch := e.ch
	e.mu.Unlock()
	var expire <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expire = t.C
	}
	tick := time.NewTicker(kazooPoll)
	defer tick.Stop()
	for {
		select {
		case <-ch:
			return true
		case <-expire:
			return e.IsSet()
		case <-ctx.Done():
			return e.IsSet()
		case <-tick.C:
			if c.pollClosed() {
				// kazoo's connection thread has stopped: nobody will
				// tell the listeners anything again.
				tick.Stop()
				continue
			}
			c.observe(false)
		}
	}
}
