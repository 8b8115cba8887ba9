package fuzz_test

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
)

// twins is a recipe whose one op asks the server the same thing from two
// goroutines at once, and notes whether, once their replies are in, the
// two ever run at the same time.
type twins struct {
	client  fuzz.Client
	dir     string
	running atomic.Int32
	// session is when the client last heard StateHasSession, in Unix
	// nanoseconds.
	session atomic.Int64
}

// listen notes when the client's session comes back.
func (w *twins) listen() {
	for ev := range w.client.Events {
		if ev.State == zk.StateHasSession {
			w.session.Store(time.Now().UnixNano())
		}
	}
}

// Counts over a campaign: ops whose two calls both waited out a cut and
// came back at one instant, and returns that ran beside another; ops
// whose two calls went out again on a new connection, and those whose
// replies came later than it did.
var twinsTogether, twinsOverlaps, twinsResent, twinsLate atomic.Int64

func (w *twins) look(_ context.Context, _ *fuzz.Call) error {
	start := time.Now()
	var wg sync.WaitGroup
	var back [2]time.Time
	var errs [2]error
	for i := range back {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = w.client.Conn.Exists(w.dir)
			back[i] = time.Now()
			if w.running.Add(1) > 1 {
				twinsOverlaps.Add(1)
			}
			for range 100 {
				runtime.Gosched() // room for the other to run, were it let
			}
			w.running.Add(-1)
		}()
	}
	wg.Wait()
	if back[0].Equal(back[1]) && back[0].After(start) {
		twinsTogether.Add(1)
		// Answered on a connection made during the call: they come
		// when it does, not when the harness's step ends.
		if reconnected := time.Unix(0, w.session.Load()); errs[0] == nil && errs[1] == nil && reconnected.After(start) {
			twinsResent.Add(1)
			if back[0].After(reconnected) {
				twinsLate.Add(1)
			}
		}
	}
	return nil
}

// TestRepliesReachAClientOneAtATime holds the harness to handing the
// replies of calls that waited out a cut to their client one at a time
// (two of its goroutines woken together would run in whatever order, and
// at once, as the Go scheduler has them, and a seed would not replay),
// and at the instant they come: a reply on the connection the client
// makes after the cut comes with it, not at the end of the harness's
// step. The campaign must reach such pairs for the test to say anything.
func TestRepliesReachAClientOneAtATime(t *testing.T) {
	t.Parallel()
	for _, n := range []*atomic.Int64{&twinsTogether, &twinsOverlaps, &twinsResent, &twinsLate} {
		n.Store(0)
	}
	r := fuzz.Recipe[*twins]{
		Name: "twins",
		New: func(_ context.Context, client fuzz.Client, dir string) *twins {
			w := &twins{client: client, dir: dir}
			go w.listen()
			return w
		},
		Ops: []fuzz.Op[*twins]{{Name: "Look", Call: (*twins).look}},
	}
	opts := []fuzz.Option{fuzz.WithoutFaults(slices.DeleteFunc(fuzz.AllFaults(), func(f fuzz.Fault) bool { return f == fuzz.Partition })...), fuzz.WithoutDetectors(fuzz.Polling, fuzz.Herd)}
	if f, _ := fuzz.Survey(t, r, opts, 300, 1, nil); f != nil {
		t.Fatalf("twins: %s\n%s", f.Summary, f.Story)
	}
	if twinsTogether.Load() == 0 {
		t.Fatal("no op had both its calls wait out a cut and come back together: the test reached nothing")
	}
	if n := twinsOverlaps.Load(); n > 0 {
		t.Fatalf("%d replies reached a goroutine while another of the client's ran (%d pairs came back together)", n, twinsTogether.Load())
	}
	if twinsResent.Load() == 0 {
		t.Fatal("no op had both its calls answered on a connection made during it: the test reached nothing")
	}
	if n := twinsLate.Load(); n > 0 {
		t.Fatalf("%d of %d pairs answered on a new connection came later than the connection", n, twinsResent.Load())
	}
	t.Logf("%d pairs of replies came back together, each handed over alone; %d of them at the instant their new connection came", twinsTogether.Load(), twinsResent.Load())
}
