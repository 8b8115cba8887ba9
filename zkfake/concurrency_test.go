package zkfake_test

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
)

// TestManyGoroutines runs writers, readers, watchers and faults at once; run
// with -race it shows the fake safe for concurrent use.
func TestManyGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithEnsemble(3))
		srv.LoseRandomReplies(0.05)
		setup, _ := connect(t, srv, 10*time.Second)
		mustCreate(t, setup, "/shared", 0)
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			c, _, err := srv.Connect(10 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			shared := c
			wg.Go(func() {
				for i := 0; i < 50; i++ {
					p := fmt.Sprintf("/shared/g%d-%d", g, i)
					shared.Create(p, []byte("x"), zk.FlagEphemeral, open)
					shared.Get(p)
					shared.Set("/shared", []byte{byte(i)}, -1)
					if _, _, ch, err := shared.ChildrenW("/shared"); err == nil && i%10 == 0 {
						select {
						case <-ch:
						case <-time.After(time.Second):
						}
					}
					shared.Multi(&zk.CreateRequest{Path: p + "m", Acl: open}, &zk.DeleteRequest{Path: p + "m", Version: -1})
					shared.Delete(p, -1)
					switch i {
					case 20:
						shared.Partition()
						time.Sleep(3 * time.Second)
						shared.Heal()
					case 30:
						srv.Expire(shared.SessionID())
					case 40:
						srv.SetLagging(g%3, g%2 == 0)
					}
				}
				shared.Close()
			})
		}
		wg.Wait()
		kids, _, err := setup.Children("/shared")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range kids {
			if _, _, err := setup.Get("/shared/" + k); err != nil {
				t.Fatalf("listed child %s unreadable: %v", k, err)
			}
		}
	})
}
