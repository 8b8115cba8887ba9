package recipe_test

import (
	"testing"

	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
	"github.com/zksim/zksim/zkfake/zktest/fake"
)

// TestElectionFake runs the Election scenarios on the fake, each in a
// synctest bubble: time is virtual, and the bubble fails the test if any
// goroutine is left behind.
func TestElectionFake(t *testing.T) {
	runElectionScenarios(t, fake.NewTarget())
}

// The observer holds one watch on the server at a time, on the leader's
// node or, with no leader, on the directory; the last one stays after ctx
// ends (go-zookeeper cannot remove a watch), and no other.
func TestElectionFakeObserverHoldsOneWatch(t *testing.T) {
	runFake(t, "watches", func(t *testing.T, env zktest.Env) {
		srv := fakeServer(t, env)
		dir := env.Base() + "/election"
		connA, _ := env.Connect(t, sessionTimeout)
		connB, _ := env.Connect(t, sessionTimeout)
		connO, _ := env.Connect(t, sessionTimeout)
		a := recipe.NewElection(connA, dir, []byte("a"))
		b := recipe.NewElection(connB, dir, []byte("b"))
		watches := func(what string, total int, on map[string]int) {
			t.Helper()
			eventually(t, what, func() bool {
				if srv.TotalWatches() != total {
					return false
				}
				for path, n := range on {
					if srv.WatchCount(path) != n {
						return false
					}
				}
				return true
			})
		}

		ctx, cancel := observeCtx(t)
		observed := recipe.NewElection(connO, dir, nil).Observe(ctx)
		nextLeader(t, "the empty seat", observed)
		watches("vacant: the observer's children watch", 1, map[string]int{dir: 1})

		if err := a.Campaign(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		aNode := nextLeader(t, "A", observed).Node
		// A's own watch on its node, and the observer's.
		watches("A leads", 2, map[string]int{dir: 0, aNode: 2})

		bDone := campaignAsync(testCtx(t), b)
		settles(t, connO, dir, 2)
		// B adds a watch on its own node and one on A's.
		watches("B waits", 4, map[string]int{dir: 0, aNode: 3})
		if err := a.Resign(); err != nil {
			t.Fatal(err)
		}
		if err := mustWait(t, "B's Campaign", bDone); err != nil {
			t.Fatal(err)
		}
		bNode := nextLeader(t, "B", observed).Node
		watches("B leads", 2, map[string]int{dir: 0, aNode: 0, bNode: 2})

		if err := b.Resign(); err != nil {
			t.Fatal(err)
		}
		nextLeader(t, "the vacancy", observed)
		watches("vacant again", 1, map[string]int{dir: 1, bNode: 0})
		cancel()
		drained(t, "after ctx ended", observed)
		watches("after ctx ended", 1, map[string]int{dir: 1})
	})
}
