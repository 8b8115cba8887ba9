package zkfake_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
)

// TestCloseReleasesEveryConn: Server.Close ends every call of every Conn,
// whatever its link: up, partitioned, partitioned past its session's
// expiry, paused. A call after Close fails with zk.ErrConnectionClosed
// instead of waiting for a server that is gone.
func TestCloseReleasesEveryConn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(c *zkfake.Conn)
	}{
		{"up", func(c *zkfake.Conn) {}},
		{"partitioned", func(c *zkfake.Conn) { c.Partition() }},
		{"partitioned past expiry", func(c *zkfake.Conn) { c.Partition(); time.Sleep(time.Minute) }},
		{"paused", func(c *zkfake.Conn) { c.Pause() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := zkfake.NewServer()
				c, _, err := srv.Connect(10 * time.Second)
				if err != nil {
					t.Fatal(err)
				}
				tc.fault(c)
				srv.Close()
				if _, _, err := c.Get("/"); !errors.Is(err, zk.ErrConnectionClosed) {
					t.Fatalf("Get after Close: %v, want %v", err, zk.ErrConnectionClosed)
				}
				c.Close()
			})
		})
	}
}
