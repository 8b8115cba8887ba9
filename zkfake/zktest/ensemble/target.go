package ensemble

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/zktest"
)

// RootPath is the persistent znode under which every run keeps its
// scenarios' base paths: RootPath/<run>/<scenario>.
const RootPath = "/zksim-test"

// sessionWait bounds how long Connect waits for a session to be
// established. On loopback it takes milliseconds; the bound only turns a
// hang into a clear failure.
const sessionWait = 15 * time.Second

// adminTimeout is the session timeout of the helper sessions this package
// opens for itself (creating and removing base paths, watching for expiry).
const adminTimeout = 4 * time.Second

// NewTarget returns a zktest.Target that runs scenarios against the
// ensemble at servers (as returned by Servers). Each scenario gets its own
// Env: a fresh persistent base znode RootPath/<run>/<scenario>, deleted
// with everything under it when the scenario ends, and sessions that are
// closed when it ends. The Env is an *Env, which also implements
// zktest.Expirer, zktest.Partitioner and zktest.Ticker.
//
// Each scenario has a home member, taken in turn from servers so that
// scenarios run on followers and on the leader alike. Sessions from Connect
// go to the home member first and move to another only when it cannot be
// reached. This matters: ZooKeeper promises each session reads in order,
// but not that a session on one member sees at once what another session
// just wrote through a different member (followers apply commits a little
// later). Scenarios written against the fake, a single server, assume that
// one session sees another's writes, which holds on one member. Use
// ConnectTo to put sessions on different members on purpose.
func NewTarget(servers []string) zktest.Target {
	return &target{
		servers: append([]string(nil), servers...),
		run:     fmt.Sprintf("%s-%d-%04x", time.Now().UTC().Format("20060102-150405"), os.Getpid(), rand.N(1<<16)),
	}
}

type target struct {
	servers []string
	run     string // this process's directory under RootPath
	seq     atomic.Int64

	tickOnce sync.Once
	tick     time.Duration
	tickErr  error

	scriptOnce sync.Once
	scripted   bool // .ci/ensemble runs these servers
}

func (tg *target) runPath() string { return RootPath + "/" + tg.run }

func (tg *target) Run(t *testing.T, name string, body func(t *testing.T, env zktest.Env)) {
	t.Run(name, func(t *testing.T) {
		env := newEnv(t, tg)
		body(t, env)
	})
}

// Env is a scenario's view of the ensemble, as given to the body passed to
// the Target's Run. Besides zktest.Env it offers ConnectTo, to put a session
// on a chosen member, the fault, member and timing interfaces of zktest,
// and Traffic, the zxids the proxy saw a session learn and send.
type Env struct {
	target *target
	home   int // index in target.servers of the member sessions prefer
	base   string
	admin  *zk.Conn // this package's own session, never partitioned

	mu      sync.Mutex
	links   map[zktest.Conn]*link
	hosts   map[zktest.Conn]*homeFirst // each session's order of members
	probes  int                        // sequence for Expire's probe nodes
	stopped []int                      // members StopMember stopped, started again at the end
	logf    func(format string, args ...any)
}

var (
	_ zktest.Env         = (*Env)(nil)
	_ zktest.Faults      = (*Env)(nil)
	_ zktest.Members     = (*Env)(nil)
	_ zktest.Ticker      = (*Env)(nil)
	_ zktest.Reconnector = (*Env)(nil)
	_ zktest.ReplyLoser  = (*Env)(nil)
	_ zktest.Quorum      = (*Env)(nil)
	_ zktest.RawDialer   = (*Env)(nil)
)

func newEnv(t *testing.T, tg *target) *Env {
	t.Helper()
	for _, s := range tg.servers {
		if err := checkLoopback(s); err != nil {
			t.Fatal(err)
		}
	}
	if len(tg.servers) == 0 {
		t.Fatal("ensemble.NewTarget: no servers")
	}
	tg.tickOnce.Do(func() { tg.tick, tg.tickErr = tickTime(tg.servers[0]) })
	if tg.tickErr != nil {
		t.Fatalf("reading the ensemble's tickTime: %v", tg.tickErr)
	}
	seq := tg.seq.Add(1)
	home := int((seq - 1) % int64(len(tg.servers)))
	admin := dialAdmin(t, tg.servers, home)
	e := &Env{
		target: tg,
		home:   home,
		base:   fmt.Sprintf("%s/%s-%d", tg.runPath(), znodeName(t.Name()), seq),
		admin:  admin,
		links:  map[zktest.Conn]*link{},
		hosts:  map[zktest.Conn]*homeFirst{},
		logf:   t.Logf,
	}
	if err := e.createBase(); err != nil {
		admin.Close()
		t.Fatalf("creating the scenario's base %s: %v", e.base, err)
	}
	// Cleanups run last-in first-out, so this one runs after the scenario's
	// sessions have been closed and their ephemerals are gone.
	t.Cleanup(func() {
		defer admin.Close()
		e.startStopped()
		if err := zktest.DeleteTree(admin, e.probeDir()); err != nil {
			t.Errorf("removing %s: %v", e.probeDir(), err)
		}
		if err := zktest.DeleteTree(admin, e.base); err != nil {
			if errors.Is(err, zk.ErrNoAuth) {
				t.Logf("leaving %s behind: %v (the scenario's ACLs deny deleting it)", e.base, err)
			} else {
				t.Errorf("removing the scenario's base %s: %v", e.base, err)
			}
		}
		// The run's directory goes with its last scenario; while others
		// still use it, this fails with ErrNotEmpty, which is expected.
		_ = admin.Delete(tg.runPath(), -1)
	})
	return e
}

// dialAdmin opens one of this package's own sessions, straight to the
// servers (never through a proxy), home member first, and waits until it is
// established.
func dialAdmin(t testing.TB, servers []string, home int) *zk.Conn {
	t.Helper()
	hosts := newHomeFirst(servers, home)
	conn, events, err := zk.Connect(servers, adminTimeout, zk.WithHostProvider(hosts),
		zk.WithDialer(hosts.wrap(net.DialTimeout)), zk.WithLogger(silentLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatalf("connecting to %v: %v", servers, err)
	}
	if err := awaitSession(events, sessionWait); err != nil {
		conn.Close()
		t.Fatalf("connecting to %v: %v", servers, err)
	}
	// Nothing reads this session's events after this point; go-zookeeper
	// drops events when its channel is full, so that is harmless.
	return conn
}

// createBase creates RootPath, the run's directory and the base. The run's
// directory can vanish under us when another scenario of this run removes it
// as it ends, so a NoNode on the last step starts over.
func (e *Env) createBase() error {
	for attempt := 0; attempt < 5; attempt++ {
		for _, p := range []string{RootPath, e.target.runPath()} {
			if _, err := e.admin.Create(p, nil, 0, zktest.OpenACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return err
			}
		}
		_, err := e.admin.Create(e.base, nil, 0, zktest.OpenACL)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		return err
	}
	return fmt.Errorf("%s kept disappearing", e.target.runPath())
}

// Base returns the scenario's own persistent znode, empty when the scenario
// starts.
func (e *Env) Base() string { return e.base }

// Real reports true: this is a real ensemble.
func (e *Env) Real() bool { return true }

// DialRaw connects to the home member directly, past the proxy, for a
// scenario that speaks the protocol itself: it sees what the Env's other
// sessions wrote through the same member. Such a connection cannot be
// partitioned.
func (e *Env) DialRaw() (net.Conn, error) {
	return net.DialTimeout("tcp", e.target.servers[e.home], sessionWait)
}

// Members returns how many servers the Env knows, the bound for ConnectTo's
// member argument.
func (e *Env) Members() int { return len(e.target.servers) }

// Home returns the number (as in ConnectTo) of the scenario's home member,
// the one Connect's sessions use while it is reachable.
func (e *Env) Home() int { return e.home }

// Servers returns the client addresses of the ensemble's members, in the
// order ConnectTo numbers them.
func (e *Env) Servers() []string { return append([]string(nil), e.target.servers...) }

// TickTime returns the ensemble's tickTime, read from the first server with
// the four-letter word conf. ZooKeeper clamps negotiated session timeouts to
// 2..20 ticks.
func (e *Env) TickTime() time.Duration { return e.target.tick }

// Connect opens a session with the requested timeout through go-zookeeper,
// on the scenario's home member (or, if it cannot be reached, another), and
// returns once the session is established. The StateConnecting, StateConnected and StateHasSession
// events of that first connection have been read from the returned channel;
// later events are left for the caller. The client reaches the members
// through this package's proxy, so the connection can be partitioned and
// its session expired. The session is closed when the test ends.
func (e *Env) Connect(t testing.TB, timeout time.Duration) (zktest.Conn, <-chan zk.Event) {
	t.Helper()
	return e.connect(t, e.target.servers, e.home, timeout)
}

// ConnectTo is Connect with the session pinned to one member, numbered from
// 0 in the order of Servers: go-zookeeper is given only that member's
// address, so the session never moves to another one. Scenarios use it to
// put sessions on different members.
func (e *Env) ConnectTo(t testing.TB, member int, timeout time.Duration) (zktest.Conn, <-chan zk.Event) {
	t.Helper()
	if member < 0 || member >= len(e.target.servers) {
		t.Fatalf("ConnectTo: member %d out of range [0, %d)", member, len(e.target.servers))
	}
	return e.connect(t, e.target.servers[member:member+1], 0, timeout)
}

// connect opens a session through a new proxy to servers, trying
// servers[home] first.
func (e *Env) connect(t testing.TB, servers []string, home int, timeout time.Duration) (zktest.Conn, <-chan zk.Event) {
	t.Helper()
	l, err := newLink(servers, timeout)
	if err != nil {
		t.Fatalf("starting the proxy for %v: %v", servers, err)
	}
	t.Cleanup(l.close)
	hosts := newHomeFirst(servers, home)
	conn, events, err := zk.Connect(servers, timeout, zk.WithHostProvider(hosts),
		zk.WithDialer(hosts.wrap(l.dial)), zk.WithLogger(silentLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatalf("connecting to %v: %v", servers, err)
	}
	// Heal first so that the close request reaches the ensemble and the
	// session ends now rather than by expiry; this runs before l.close.
	t.Cleanup(func() {
		l.heal()
		conn.Close()
	})
	e.mu.Lock()
	e.links[conn] = l
	e.hosts[conn] = hosts
	e.mu.Unlock()
	if err := awaitSession(events, sessionWait); err != nil {
		t.Fatalf("connecting to %v: %v", servers, err)
	}
	// The base was created by another session, perhaps through another
	// member; sync so that this session's member has caught up with it.
	if _, err := conn.Sync(e.base); err != nil {
		t.Fatalf("syncing %s on the new session: %v", e.base, err)
	}
	return conn, events
}

// awaitSession reads a new connection's events until StateHasSession.
func awaitSession(events <-chan zk.Event, wait time.Duration) error {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	var seen []string
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return fmt.Errorf("connection closed before a session was established (events: %s)", strings.Join(seen, ", "))
			}
			if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
				return nil
			}
			seen = append(seen, ev.State.String())
		case <-deadline.C:
			return fmt.Errorf("no session within %v (events: %s)", wait, strings.Join(seen, ", "))
		}
	}
}

// znodeName turns a test name into one znode path element: anything but
// letters, digits, '-', '_' and '.' becomes '_', and it is kept short.
func znodeName(testName string) string {
	var b strings.Builder
	for _, r := range testName {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 120 {
			break
		}
	}
	return b.String()
}

// silentLogger keeps go-zookeeper's connection chatter out of test output.
type silentLogger struct{}

func (silentLogger) Printf(string, ...any) {}

// homeFirst is a zk.HostProvider that tries the home member first — on the
// first connection and whenever a connection has just been made to a member
// and lost — and the others in order after it, one per failed dial. Like
// go-zookeeper's own provider it reports retryStart, which makes the client
// pause a second and fail queued requests with ErrNoServer, each time it has
// failed to reach every member in turn. It learns of failed dials through
// the dialer that wrap returns.
type homeFirst struct {
	mu       sync.Mutex
	order    []string
	failures int // dials failed in a row
}

func newHomeFirst(servers []string, home int) *homeFirst {
	order := []string{servers[home]}
	for i, s := range servers {
		if i != home {
			order = append(order, s)
		}
	}
	return &homeFirst{order: order}
}

// wrap returns dial, counting its failures for Next.
func (h *homeFirst) wrap(dial zk.Dialer) zk.Dialer {
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		conn, err := dial(network, addr, timeout)
		h.mu.Lock()
		if err != nil {
			h.failures++
		} else {
			h.failures = 0
		}
		h.mu.Unlock()
		return conn, err
	}
}

// moveHome makes server the one tried first from now on, the others
// following in their order; it reports false if server is not one of the
// provider's.
func (h *homeFirst) moveHome(server string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := slices.Index(h.order, server)
	if i < 0 {
		return false
	}
	order := []string{server}
	order = append(order, h.order[:i]...)
	h.order = append(order, h.order[i+1:]...)
	return true
}

// Init is given go-zookeeper's shuffled copy of the servers, which homeFirst
// ignores in favour of its own order.
func (h *homeFirst) Init(servers []string) error {
	if len(servers) != len(h.order) {
		return fmt.Errorf("ensemble: host provider made for %d servers, given %d", len(h.order), len(servers))
	}
	return nil
}

// Len returns the number of members.
func (h *homeFirst) Len() int { return len(h.order) }

// Next returns the member to dial next.
func (h *homeFirst) Next() (server string, retryStart bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.order)
	return h.order[h.failures%n], h.failures > 0 && h.failures%n == 0
}

// Connected is called once a session is established; the dial had already
// reset the failure count.
func (h *homeFirst) Connected() {}
