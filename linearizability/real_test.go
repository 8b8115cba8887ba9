package linearizability_test

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/zkfake/zktest"
)

// These tests record histories against a real ZooKeeper, named by
// ZK_SERVERS (comma-separated host:port, loopback only), and check them with
// the models: whatever ZooKeeper does must be legal. They are skipped when
// ZK_SERVERS is unset.

func realServers(t *testing.T) []string {
	t.Helper()
	env := os.Getenv("ZK_SERVERS")
	if env == "" {
		t.Skip("ZK_SERVERS is not set")
	}
	servers := strings.Split(env, ",")
	for _, s := range servers {
		host, _, err := net.SplitHostPort(s)
		if err != nil {
			t.Fatalf("ZK_SERVERS: %v", err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			t.Fatalf("ZK_SERVERS names %s; tests talk to loopback addresses only", s)
		}
	}
	return servers
}

type silentLogger struct{}

func (silentLogger) Printf(string, ...any) {}

func connectReal(t *testing.T, servers []string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect(servers, 4*time.Second, zk.WithLogger(silentLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				go func() {
					for range events {
					}
				}()
				return conn
			}
		case <-deadline:
			conn.Close()
			t.Fatal("no session within 10s")
		}
	}
}

// realBase creates a fresh base znode and removes it, with everything
// under it, when the test ends.
func realBase(t *testing.T, conn *zk.Conn) string {
	t.Helper()
	base := fmt.Sprintf("/linearizability-test-%d", rand.Int64())
	if _, err := conn.Create(base, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := zktest.DeleteTree(conn, base); err != nil {
			t.Errorf("removing %s: %v", base, err)
		}
	})
	return base
}

// runReal performs a znode operation on a real connection.
func runReal(conn *zk.Conn, in linearizability.ZnodeInput) linearizability.ZnodeOutput {
	var out linearizability.ZnodeOutput
	switch in.Op {
	case linearizability.Create:
		out.Path, out.Err = conn.Create(in.Path, []byte(in.Data), in.Flags, zk.WorldACL(zk.PermAll))
	case linearizability.Delete:
		out.Err = conn.Delete(in.Path, in.Version)
	case linearizability.Set:
		var stat *zk.Stat
		stat, out.Err = conn.Set(in.Path, []byte(in.Data), in.Version)
		out.Stat = linearizability.StatOf(stat)
	case linearizability.Get:
		var data []byte
		var stat *zk.Stat
		data, stat, out.Err = conn.Get(in.Path)
		out.Data, out.Stat = string(data), linearizability.StatOf(stat)
	case linearizability.Exists:
		var stat *zk.Stat
		out.Exists, stat, out.Err = conn.Exists(in.Path)
		if out.Exists {
			out.Stat = linearizability.StatOf(stat)
		}
	case linearizability.Children:
		var stat *zk.Stat
		out.Children, stat, out.Err = conn.Children(in.Path)
		out.Stat = linearizability.StatOf(stat)
	case linearizability.Sync:
		_, out.Err = conn.Sync(in.Path)
	}
	return out
}

func TestZnodesAgainstRealZooKeeper(t *testing.T) {
	servers := realServers(t)
	admin := connectReal(t, servers)
	t.Cleanup(admin.Close) // after realBase's clean-up, which needs the session
	base := realBase(t, admin)
	var initial []linearizability.Znode
	for _, dir := range testDirs {
		path := base + strings.TrimPrefix(dir, "/t")
		if _, err := admin.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		initial = append(initial, linearizability.Znode{Path: path})
	}

	rec := linearizability.NewRecorder(nil)
	// The clients' choices are drawn from a seed of the run's, told so that
	// a failing run's choices can be read again; the real ensemble's timing
	// is not replayed with them.
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	var wg sync.WaitGroup
	for client := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(client), seed))
			conn := connectReal(t, servers)
			// Closing a session deletes its ephemerals, like an
			// expiry, and the other clients may see it: record it.
			closeSession := func() {
				before, session := time.Now(), conn.SessionID()
				conn.Close()
				rec.Observe(linearizability.SessionExpiry{Session: session}, nil, before, time.Now())
			}
			defer func() { closeSession() }()
			for i := range 60 {
				if client == 1 && i == 30 {
					rec.Fault(client, linearizability.FaultExpiry, "session closed")
					closeSession()
					conn = connectReal(t, servers)
				}
				in := randomZnodeInput(rng, conn.SessionID())
				in.Path = base + strings.TrimPrefix(in.Path, "/t")
				op := rec.Call(client, in)
				op.Return(runReal(conn, in))
			}
		})
	}
	wg.Wait()
	h := rec.History()
	res := checkZnodes(t, h, initial...)
	wantOutcome(t, res, linearizability.Ok)
	t.Logf("real ZooKeeper history: %v", res)
}

func TestMutexAgainstRealZooKeeper(t *testing.T) {
	servers := realServers(t)
	admin := connectReal(t, servers)
	t.Cleanup(admin.Close) // after realBase's clean-up, which needs the session
	lockPath := realBase(t, admin) + "/lock"
	rec := linearizability.NewRecorder(nil)
	res := &resource{fenced: true}
	var wg sync.WaitGroup
	for client := range 3 {
		wg.Go(func() {
			conn := connectReal(t, servers)
			defer func() { conn.Close() }()
			for i := range 8 {
				session := conn.SessionID()
				lock := zk.NewLock(conn, lockPath, zk.WorldACL(zk.PermAll))
				op := rec.Call(client, linearizability.MutexInput{Op: linearizability.Acquire, Lock: lockPath, Session: session})
				if err := lock.Lock(); err != nil {
					op.Unknown()
					continue
				}
				token, err := holderToken(conn, lockPath)
				if err != nil {
					op.Unknown()
					continue
				}
				op.Return(linearizability.MutexOutput{OK: true, Token: token})

				op = rec.Call(client, linearizability.MutexInput{Op: linearizability.Write, Lock: lockPath, Session: session, Token: token})
				op.Return(linearizability.MutexOutput{OK: res.write(token)})

				if client == 0 && i == 4 {
					// The holder goes away without releasing: its
					// session's end releases the lock.
					before := time.Now()
					rec.Fault(client, linearizability.FaultCrash, "closed while holding the lock")
					conn.Close()
					rec.Observe(linearizability.SessionExpiry{Session: session}, nil, before, time.Now())
					conn = connectReal(t, servers)
					continue
				}
				op = rec.Call(client, linearizability.MutexInput{Op: linearizability.Release, Lock: lockPath, Session: session})
				if err := lock.Unlock(); err != nil {
					op.Unknown()
					continue
				}
				op.Return(linearizability.MutexOutput{OK: true})
			}
		})
	}
	wg.Wait()
	result := checkMutex(t, rec.History())
	wantOutcome(t, result, linearizability.Ok)
	t.Logf("real ZooKeeper history: %v", result)
}

// holderToken returns the sequence number of the lowest lock node: the
// holder's, which is the fencing token.
func holderToken(conn *zk.Conn, lockPath string) (int64, error) {
	children, _, err := conn.Children(lockPath)
	if err != nil {
		return 0, err
	}
	var seqs []int64
	for _, c := range children {
		seq, err := strconv.ParseInt(c[strings.LastIndex(c, "-")+1:], 10, 64)
		if err != nil {
			return 0, err
		}
		seqs = append(seqs, seq)
	}
	if len(seqs) == 0 {
		return 0, fmt.Errorf("no lock node under %s", lockPath)
	}
	return slices.Min(seqs), nil
}
