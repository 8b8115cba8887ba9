package fuzz

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
	"pgregory.net/rapid"
)

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
			got := client.check(View{SessionTimeout: time.Second})
			if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
				t.Fatalf("stream of tokens %v: check says %q, want %q", c.tokens, got, c.want)
			}
		})
	}
}

// heldInDoubt is recipe.Mutex saying Held while its hold is suspended.
type heldInDoubt struct{ recipeMutex }

func (h heldInDoubt) State() recipe.MutexState {
	if st := h.recipeMutex.State(); st != recipe.MutexSuspended {
		return st
	}
	return recipe.MutexHeld
}

// A lock that says Held while its connection has been down for longer than
// its session timeout is found by the in-doubt check.
func TestHeldInDoubtIsFound(t *testing.T) {
	e := newEngine(Lock(func(conn zktest.Conn, path string) Locker {
		return heldInDoubt{RecipeMutex(conn, path).(recipeMutex)}
	}).subject(), Config{}.normalized())
	e.survey, e.surveyFor = true, func(f *Finding) bool { return strings.Contains(f.Summary, "connection has been down") }
	withRapid(t, 300, 1, func() { rapid.Check(t, e.property) })
	f := e.lastFinding()
	if f == nil {
		t.Fatal("not found in 300 cases")
	}
	if f.Detector != StateReport {
		t.Fatalf("found by %s, want %s: %s", f.Detector, StateReport, f.Summary)
	}
	t.Logf("%s: %s", f.Detector, f.Summary)
}
