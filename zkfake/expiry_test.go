package zkfake_test

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
)

// expireMany takes n sessions with 30-second timeouts, each owning an
// ephemeral node, through a crash and expiry; advance moves time on.
func expireMany(t testing.TB, srv *zkfake.Server, n int, advance func(time.Duration)) {
	conns := make([]*zkfake.Conn, n)
	for i := range conns {
		c, _, err := srv.Connect(30 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Create(fmt.Sprintf("/e%d", i), nil, zk.FlagEphemeral, open); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	for _, c := range conns {
		c.Crash()
	}
	advance(30*time.Second + time.Millisecond)
	if got := len(srv.Sessions()); got != 0 {
		t.Fatalf("%d sessions left after their timeout", got)
	}
	if got := srv.NodeCount(); got != 4 {
		t.Fatalf("%d nodes left, want the 4 a fresh server has:\n%s", got, srv.Dump())
	}
}

func TestThousandSessionsExpireUnderSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		expireMany(t, zkfake.NewServer(zkfake.WithoutEventLog()), 1000, time.Sleep)
	})
}

func TestThousandSessionsExpireOnManualClock(t *testing.T) {
	srv := zkfake.NewServer(zkfake.WithoutEventLog(), zkfake.WithManualClock(time.Unix(0, 0)))
	expireMany(t, srv, 1000, func(d time.Duration) { srv.FastForward(d) })
}

// BenchmarkThousandSessionsExpire measures the wall time of taking 1,000
// sessions with 30-second timeouts through expiry. A benchmark has no
// *testing.T for a synctest bubble, so it drives the same virtual-time path
// through the server's manual clock.
func BenchmarkThousandSessionsExpire(b *testing.B) {
	for b.Loop() {
		srv := zkfake.NewServer(zkfake.WithoutEventLog(), zkfake.WithManualClock(time.Unix(0, 0)))
		expireMany(b, srv, 1000, func(d time.Duration) { srv.FastForward(d) })
	}
}

// TestAnEndedSessionsNodesGoInTheOrderTheyWereMade holds the deletes of a
// closed or expired session's ephemerals, and so the watch events they
// fire, to the order the nodes were made. ZooKeeper deletes them in its
// hash set's order, which no client may rely on; the fake's order must
// not hang on the names, which client libraries often draw at random
// (protected creates), or a seeded scenario would not replay.
func TestAnEndedSessionsNodesGoInTheOrderTheyWereMade(t *testing.T) {
	for _, end := range []string{"close", "expire"} {
		t.Run(end, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := zkfake.NewServer(zkfake.WithSeed(1))
				defer srv.Close()
				owner, _ := connect(t, srv, 10*time.Second)
				watcher, _ := connect(t, srv, 10*time.Second)
				made := []string{"/m", "/z", "/a"}
				for _, p := range made {
					mustCreate(t, owner, p, zk.FlagEphemeral)
					if _, _, _, err := watcher.ExistsW(p); err != nil {
						t.Fatal(err)
					}
				}
				if end == "close" {
					owner.Close()
				} else {
					srv.Expire(owner.SessionID())
				}
				synctest.Wait()
				var told []string
				for _, r := range srv.Log() {
					if r.Kind == zkfake.RecordWatch && r.Session == watcher.SessionID() {
						told = append(told, r.Path)
					}
				}
				if !slices.Equal(told, made) {
					t.Fatalf("the watcher heard of %q; want the order they were made, %q", told, made)
				}
			})
		})
	}
}
