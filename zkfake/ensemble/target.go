package ensemble

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
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

var openACL = zk.WorldACL(zk.PermAll)

// NewTarget returns a zktest.Target that runs scenarios against the
// ensemble at servers (as returned by Servers). Each scenario gets its own
// Env: a fresh persistent base znode RootPath/<run>/<scenario>, deleted
// with everything under it when the scenario ends, and sessions that are
// closed when it ends. The Env is an *Env, which also implements
// zktest.Expirer, zktest.Partitioner and zktest.Ticker.
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
// on a chosen member, and the fault and timing interfaces of zktest.
type Env struct {
	target *target
	base   string
	admin  *zk.Conn
}

var (
	_ zktest.Env    = (*Env)(nil)
	_ zktest.Ticker = (*Env)(nil)
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
	admin := dialAdmin(t, tg.servers)
	e := &Env{
		target: tg,
		base:   fmt.Sprintf("%s/%s-%d", tg.runPath(), znodeName(t.Name()), tg.seq.Add(1)),
		admin:  admin,
	}
	if err := e.createBase(); err != nil {
		admin.Close()
		t.Fatalf("creating the scenario's base %s: %v", e.base, err)
	}
	// Cleanups run last-in first-out, so this one runs after the scenario's
	// sessions have been closed and their ephemerals are gone.
	t.Cleanup(func() {
		defer admin.Close()
		if err := deleteTree(admin, e.base); err != nil {
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
// servers (never through a proxy), and waits until it is established.
func dialAdmin(t testing.TB, servers []string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect(servers, adminTimeout, zk.WithLogger(silentLogger{}), zk.WithLogInfo(false))
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
			if _, err := e.admin.Create(p, nil, 0, openACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return err
			}
		}
		_, err := e.admin.Create(e.base, nil, 0, openACL)
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

// Members returns how many servers the Env knows, the bound for ConnectTo's
// member argument.
func (e *Env) Members() int { return len(e.target.servers) }

// Servers returns the client addresses of the ensemble's members, in the
// order ConnectTo numbers them.
func (e *Env) Servers() []string { return append([]string(nil), e.target.servers...) }

// TickTime returns the ensemble's tickTime, read from the first server with
// the four-letter word conf. ZooKeeper clamps negotiated session timeouts to
// 2..20 ticks.
func (e *Env) TickTime() time.Duration { return e.target.tick }

// Connect opens a session with the requested timeout through go-zookeeper,
// letting it choose among all members, and returns once the session is
// established. The StateConnecting, StateConnected and StateHasSession
// events of that first connection have been read from the returned channel;
// later events are left for the caller. The session is closed when the test
// ends.
func (e *Env) Connect(t testing.TB, timeout time.Duration) (recipe.Conn, <-chan zk.Event) {
	t.Helper()
	return e.connect(t, e.target.servers, timeout)
}

// ConnectTo is Connect with the session pinned to one member, numbered from
// 0 in the order of Servers: go-zookeeper is given only that member's
// address, so the session never moves to another one. Scenarios use it to
// put sessions on different members.
func (e *Env) ConnectTo(t testing.TB, member int, timeout time.Duration) (recipe.Conn, <-chan zk.Event) {
	t.Helper()
	if member < 0 || member >= len(e.target.servers) {
		t.Fatalf("ConnectTo: member %d out of range [0, %d)", member, len(e.target.servers))
	}
	return e.connect(t, e.target.servers[member:member+1], timeout)
}

func (e *Env) connect(t testing.TB, servers []string, timeout time.Duration) (recipe.Conn, <-chan zk.Event) {
	t.Helper()
	conn, events, err := zk.Connect(servers, timeout, zk.WithLogger(silentLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatalf("connecting to %v: %v", servers, err)
	}
	t.Cleanup(conn.Close)
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

// deleteTree deletes path and everything under it. Children can appear
// while it works (a session closing late, a sequential create in flight), so
// a parent that is not empty yet is listed again.
func deleteTree(conn *zk.Conn, path string) error {
	for attempt := 0; attempt < 10; attempt++ {
		children, _, err := conn.Children(path)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("listing %s: %w", path, err)
		}
		for _, child := range children {
			if err := deleteTree(conn, path+"/"+child); err != nil {
				return err
			}
		}
		err = conn.Delete(path, -1)
		switch {
		case err == nil, errors.Is(err, zk.ErrNoNode):
			return nil
		case errors.Is(err, zk.ErrNotEmpty):
			continue
		default:
			return fmt.Errorf("deleting %s: %w", path, err)
		}
	}
	return fmt.Errorf("deleting %s: it keeps getting new children", path)
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
