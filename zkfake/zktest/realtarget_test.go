package zktest_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// realTarget runs scenarios against the ZooKeeper servers named in
// ZK_SERVERS (comma-separated, loopback only). Faults are injected in the
// client's dialer: a partition closes the client's TCP connections and
// refuses new ones until healed.
type realTarget struct {
	servers []string
	tick    time.Duration
	prefix  string
}

func newRealTarget(t *testing.T) *realTarget {
	spec := os.Getenv("ZK_SERVERS")
	if spec == "" {
		t.Skip("ZK_SERVERS not set; set it to run the suite against a real ZooKeeper")
	}
	servers := strings.Split(spec, ",")
	for _, s := range servers {
		host, _, err := net.SplitHostPort(s)
		if err != nil || host != "127.0.0.1" {
			t.Fatalf("ZK_SERVERS entry %q: only 127.0.0.1:port addresses are allowed", s)
		}
	}
	tick := 200 * time.Millisecond
	if v := os.Getenv("ZK_TICK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("ZK_TICK: %v", err)
		}
		tick = d
	}
	return &realTarget{servers: servers, tick: tick, prefix: fmt.Sprintf("/zktest-%x", rand.Uint64())}
}

func (rt *realTarget) Run(t *testing.T, name string, body func(t *testing.T, env zktest.Env)) {
	t.Run(name, func(t *testing.T) {
		env := &realEnv{target: rt, links: map[recipe.Conn]*link{}}
		admin, _ := env.Connect(t, 4*time.Second)
		env.base = rt.prefix + "/" + strings.ReplaceAll(name, "/", "_")
		for _, p := range []string{rt.prefix, env.base} {
			if _, err := admin.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
				t.Fatalf("creating %s: %v", p, err)
			}
		}
		// Cleanups run last-in first-out: the scenario's sessions close
		// (removing their ephemerals) before the base is removed.
		t.Cleanup(func() { removeAll(t, env, env.base) })
		body(t, env)
	})
}

func removeAll(t *testing.T, env *realEnv, path string) {
	c, _ := env.Connect(t, 4*time.Second)
	_ = c.AddAuth("digest", []byte("zktest:cleanup"))
	var walk func(p string)
	walk = func(p string) {
		children, _, _ := c.Children(p)
		for _, child := range children {
			walk(p + "/" + child)
		}
		if err := c.Delete(p, -1); err != nil && err != zk.ErrNoNode {
			t.Logf("cleanup: delete %s: %v", p, err)
		}
	}
	walk(path)
	c.Close()
}

type realEnv struct {
	target *realTarget
	base   string
	mu     sync.Mutex
	links  map[recipe.Conn]*link
}

func (e *realEnv) Base() string                          { return e.base }
func (e *realEnv) Real() bool                            { return true }
func (e *realEnv) TickTime() time.Duration               { return e.target.tick }
func (e *realEnv) Partition(t testing.TB, c recipe.Conn) { e.link(t, c).cut() }
func (e *realEnv) Heal(t testing.TB, c recipe.Conn)      { e.link(t, c).heal() }

// Expire holds the client off the server until the server has expired the
// session: the negotiated timeout (at most 20 ticks) plus a few ticks for
// the session tracker's expiry buckets.
func (e *realEnv) Expire(t testing.TB, c recipe.Conn) {
	l := e.link(t, c)
	l.cut()
	timeout := l.timeout
	if lo, hi := 2*e.target.tick, 20*e.target.tick; timeout < lo {
		timeout = lo
	} else if timeout > hi {
		timeout = hi
	}
	time.Sleep(timeout + 4*e.target.tick)
	l.heal()
}

func (e *realEnv) link(t testing.TB, c recipe.Conn) *link {
	e.mu.Lock()
	defer e.mu.Unlock()
	l, ok := e.links[c]
	if !ok {
		t.Fatalf("connection not opened by this environment")
	}
	return l
}

func (e *realEnv) Connect(t testing.TB, timeout time.Duration) (recipe.Conn, <-chan zk.Event) {
	l := &link{timeout: timeout}
	c, events, err := zk.Connect(e.target.servers, timeout,
		zk.WithDialer(l.dial), zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(10 * time.Second)
	for established := false; !established; {
		select {
		case ev := <-events:
			established = ev.Type == zk.EventSession && ev.State == zk.StateHasSession
		case <-deadline:
			t.Fatalf("no session with %v within 10s", e.target.servers)
		}
	}
	e.mu.Lock()
	e.links[c] = l
	e.mu.Unlock()
	return c, events
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

var errPartitioned = errors.New("zktest: partitioned")

// link is one client's path to the servers, which a test can cut.
type link struct {
	timeout time.Duration
	mu      sync.Mutex
	severed bool
	conns   []net.Conn
}

func (l *link) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.severed {
		return nil, errPartitioned
	}
	c, err := net.DialTimeout(network, addr, timeout)
	if err == nil {
		l.conns = append(l.conns, c)
	}
	return c, err
}

func (l *link) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.severed = true
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
}

func (l *link) heal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.severed = false
}

func TestConformance(t *testing.T) {
	zktest.Run(t, newRealTarget(t))
}
