package targets

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/recipe"
)

// TestRecipeElection runs the project's leader election through
// campaigns of every size of client group, as TestRecipeMutex does the
// lock. A longer run: go test ./fuzz/targets -run TestRecipeElection -rapid.checks=5000.
func TestRecipeElection(t *testing.T) {
	for _, n := range []int{2, 3, 5, 8} {
		t.Run(fmt.Sprintf("clients=%d", n), func(t *testing.T) {
			t.Parallel()
			fuzz.Check(t, Election(RecipeElection), fuzz.WithClients(n))
		})
	}
}

// TestRecipeRWMutex runs the project's read/write lock through campaigns
// of every size of client group.
func TestRecipeRWMutex(t *testing.T) {
	for _, n := range []int{2, 3, 5, 8} {
		t.Run(fmt.Sprintf("clients=%d", n), func(t *testing.T) {
			t.Parallel()
			fuzz.Check(t, RWMutex(RecipeRWMutex), fuzz.WithClients(n))
		})
	}
}

// TestRecipeSemaphore runs the project's counting semaphore through
// campaigns of every size of client group.
func TestRecipeSemaphore(t *testing.T) {
	for _, n := range []int{2, 3, 5, 8} {
		t.Run(fmt.Sprintf("clients=%d", n), func(t *testing.T) {
			t.Parallel()
			fuzz.Check(t, Semaphore(RecipeSemaphore), fuzz.WithClients(n))
		})
	}
}

// TestSoundQueueRWMutex holds the queue lock's read/write lock, which the
// read/write mutants break, to the same campaign.
func TestSoundQueueRWMutex(t *testing.T) {
	t.Parallel()
	fuzz.Check(t, RWMutex(queueRWLocker(sound)))
}

// TestSoundQueueElection holds the queue lock's election, which two of
// the election mutants break, to the election's campaign.
func TestSoundQueueElection(t *testing.T) {
	t.Parallel()
	fuzz.Check(t, Election(queueElector(sound)))
}

// backwardObserver's stream tells of the leaders it is given, in order.
type backwardObserver struct {
	Elector
	leaders []recipe.Leader
}

func (o backwardObserver) Observe(ctx context.Context) <-chan recipe.Leader {
	out := make(chan recipe.Leader)
	go func() {
		defer close(out)
		for _, l := range o.leaders {
			select {
			case out <- l:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// The observer's check fails on a stream that goes back to an older
// leader, and passes one that only moves on (through "no leader").
func TestObserverGoingBackIsFound(t *testing.T) {
	for _, c := range []struct {
		tokens []int64
		want   string
	}{
		{[]int64{7, 8, 7}, "went back from token 8"},
		{[]int64{7, 0, 8, 9}, ""},
	} {
		synctest.Test(t, func(t *testing.T) {
			var leaders []recipe.Leader
			for _, tok := range c.tokens {
				l := recipe.Leader{Token: tok}
				if tok != 0 {
					l.Node = "/e/n"
				}
				leaders = append(leaders, l)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			client := &electionClient{elector: backwardObserver{leaders: leaders}, observer: true}
			client.follow(ctx)
			synctest.Wait()
			got := client.check(fuzz.View{SessionTimeout: time.Second})
			if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
				t.Fatalf("stream of tokens %v: check says %q, want %q", c.tokens, got, c.want)
			}
		})
	}
}
