package zkbench

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/zktest"
	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

// RootPath is the persistent znode under which every Target keeps its own
// directory, RootPath/<fake|real>-<pid>-<random>, which it deletes with
// everything under it when the benchmark ends.
const RootPath = "/zksim-bench"

// sessionTimeout is what every benchmark session asks for. The ensemble
// clamps it to its own bounds (20 ticks); nothing here waits for a session to
// expire, so the value matters only in that a benchmark never outlives it
// while the client is connected.
const sessionTimeout = 10 * time.Second

// sessionWait bounds how long Real waits for a session to be established;
// on loopback it takes milliseconds.
const sessionWait = 15 * time.Second

// Target is where a workload runs: the fake or a real ensemble. It opens
// sessions, owns a fresh persistent directory for the workload, and counts
// the watch events delivered to its sessions.
type Target struct {
	name    string
	base    string
	srv     *zkfake.Server // nil on a real ensemble
	servers []string       // empty on the fake
	events  atomic.Int64   // watch events seen by the real side's sessions
}

// Fake returns a Target on a new zkfake.Server, made with the event log off
// (the log grows without bound and is not what a benchmark measures) and
// then opts. The server is closed when tb ends.
func Fake(tb testing.TB, opts ...zkfake.Option) *Target {
	tb.Helper()
	srv := zkfake.NewServer(append([]zkfake.Option{zkfake.WithoutEventLog()}, opts...)...)
	tb.Cleanup(srv.Close)
	t := &Target{name: "fake", srv: srv}
	admin := t.Connect(tb)
	t.base = makeBase(tb, admin, "fake")
	return t
}

// Real returns a Target on the ensemble named in ZK_SERVERS, and skips tb
// when it is unset (see ensemble.Servers, which also fails tb on a malformed
// or unreachable ensemble). Sessions go straight to the members through
// go-zookeeper's zk.Connect, without the fault-injection proxy that the
// conformance suite puts in between, so latencies are the client's and the
// ensemble's alone. The Target's directory is deleted, and its sessions
// closed, when tb ends.
func Real(tb testing.TB) *Target {
	tb.Helper()
	servers := ensemble.Servers(tb)
	t := &Target{name: "real", servers: servers}
	admin := t.Connect(tb)
	t.base = makeBase(tb, admin, "real")
	// Registered after the admin session's Close, so it runs before it:
	// cleanups run last-registered first.
	tb.Cleanup(func() {
		if err := zktest.DeleteTree(admin, t.base); err != nil {
			tb.Errorf("removing %s: %v", t.base, err)
		}
		// The shared root goes too once no other run uses it.
		if err := admin.Delete(RootPath, -1); err != nil && !errors.Is(err, zk.ErrNotEmpty) && !errors.Is(err, zk.ErrNoNode) {
			tb.Errorf("removing %s: %v", RootPath, err)
		}
	})
	return t
}

// Name returns "fake" or "real".
func (t *Target) Name() string { return t.name }

// Real reports whether the Target is a real ensemble.
func (t *Target) Real() bool { return t.srv == nil }

// Base returns the Target's own persistent directory, empty when the Target
// is made. Workloads create what they need under it.
func (t *Target) Base() string { return t.base }

// Server returns the fake server behind the Target, or nil on a real
// ensemble.
func (t *Target) Server() *zkfake.Server { return t.srv }

// WatchEvents returns how many watch events (anything but session events)
// the Target's sessions have been delivered so far. On the fake it is the
// server's own count (zkfake.Server.TotalDeliveredEvents); on a real ensemble
// it is counted as the events arrive at the clients, before go-zookeeper
// hands them to the watchers.
func (t *Target) WatchEvents() int64 {
	if t.srv != nil {
		return int64(t.srv.TotalDeliveredEvents())
	}
	return t.events.Load()
}

// Connect opens a new session and returns once it is established. It is
// closed when tb ends.
func (t *Target) Connect(tb testing.TB) zktest.Conn {
	tb.Helper()
	if t.srv != nil {
		conn, _, err := t.srv.Connect(sessionTimeout)
		if err != nil {
			tb.Fatalf("connecting to the fake: %v", err)
		}
		tb.Cleanup(conn.Close)
		return conn
	}
	conn, events, err := zk.Connect(t.servers, sessionTimeout,
		zk.WithLogger(quietLogger{}),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type != zk.EventSession {
				t.events.Add(1)
			}
		}))
	if err != nil {
		tb.Fatalf("connecting to %v: %v", t.servers, err)
	}
	tb.Cleanup(conn.Close)
	if err := awaitSession(events); err != nil {
		tb.Fatalf("connecting to %v: %v", t.servers, err)
	}
	// Nobody reads the rest of the channel: go-zookeeper drops what does
	// not fit, and the count above has already seen every event.
	return conn
}

// awaitSession reads events until the session is established.
func awaitSession(events <-chan zk.Event) error {
	deadline := time.NewTimer(sessionWait)
	defer deadline.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return errors.New("event channel closed before the session was established")
			}
			if ev.State == zk.StateHasSession {
				return nil
			}
			if ev.State == zk.StateAuthFailed {
				return fmt.Errorf("session refused: %v", ev.State)
			}
		case <-deadline.C:
			return fmt.Errorf("no session within %v", sessionWait)
		}
	}
}

// quietLogger keeps go-zookeeper's connection chatter out of the benchmark
// output, which cmd/zkbench parses.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// makeBase creates RootPath (if missing) and a fresh directory under it.
func makeBase(tb testing.TB, conn zktest.Conn, name string) string {
	tb.Helper()
	if _, err := conn.Create(RootPath, nil, 0, zktest.OpenACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		tb.Fatalf("creating %s: %v", RootPath, err)
	}
	base := fmt.Sprintf("%s/%s-%d-%08x", RootPath, name, os.Getpid(), rand.Uint32())
	if _, err := conn.Create(base, nil, 0, zktest.OpenACL); err != nil {
		tb.Fatalf("creating %s: %v", base, err)
	}
	return base
}

// mkdir creates a persistent directory and returns its path.
func mkdir(tb testing.TB, conn zktest.Conn, path string) string {
	tb.Helper()
	if _, err := conn.Create(path, nil, 0, zktest.OpenACL); err != nil {
		tb.Fatalf("creating %s: %v", path, err)
	}
	return path
}
