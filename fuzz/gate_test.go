package fuzz

import (
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zksim/zksim/zkfake/zktest"
)

// TestARealClientsCallsGoInTheOrderTheServerReadThem holds the gate to
// ZooKeeper's order within a session: of a real client's calls that wait
// together, the one the server read first goes first, whatever the order
// of their method and path and whatever the move drew; in process, where
// the order the calls were made is the scheduler's, the draw picks.
func TestARealClientsCallsGoInTheOrderTheServerReadThem(t *testing.T) {
	calls := func(arrivals ...int64) *incarnation {
		return &incarnation{pending: []*request{
			{method: "create", path: "/lock/n", arrival: arrivals[0]},
			{method: "exists", path: "/lock/n", arrival: arrivals[1]},
			{method: "getChildren", path: "/lock", arrival: arrivals[2]},
			{point: pointOp},
		}}
	}
	for which := range 4 {
		if got := calls(3, 1, 2).chooseRequest(which); got.method != "exists" {
			t.Errorf("real client, sent exists, getChildren, create, draw %d: %s went first", which, got.method)
		}
	}
	// A call a closed Conn holds on the client's side has no number: it
	// goes after those the server read, whichever goroutine came first.
	for _, c := range []struct {
		arrivals []int64 // of create, exists, getChildren
		want     string
	}{
		{[]int64{0, 7, 5}, "getChildren exists create"},
		{[]int64{7, 0, 5}, "getChildren create exists"},
	} {
		inc := calls(c.arrivals...)
		slices.Reverse(inc.pending) // the goroutines came the other way round
		var order []string
		for r := inc.chooseRequest(0); r != nil && r.point == noPoint; r = inc.chooseRequest(0) {
			order = append(order, r.method)
			inc.take(r)
		}
		if got := strings.Join(order, " "); got != c.want {
			t.Errorf("real client, arrivals of create, exists, getChildren %v: %s went, want %s", c.arrivals, got, c.want)
		}
	}
	want := []string{"create", "exists", "getChildren", "create"}
	for which, w := range want {
		if got := calls(0, 0, 0).chooseRequest(which); got.method != w {
			t.Errorf("in process, draw %d: %s went first, want %s", which, got.method, w)
		}
	}
}

// TestIdenticalCallsGoByWhereTheyWereMade holds the gate to ordering two
// identical calls of one client by where in the recipe they were made, not
// by which goroutine reached the gate first: a lock loop's listing and a
// background search's listing of the same directory, which a retry's
// sleep ends at one instant, must go the same way in every run. At a real
// client's gate, where the server numbered the calls, nothing is recorded.
func TestIdenticalCallsGoByWhereTheyWereMade(t *testing.T) {
	listing := zktest.Request{Op: "getChildren", Path: "/lock"}
	lockLoop := func() *request { return newCallRequest(listing, false) }
	backgroundSearch := func() *request { return newCallRequest(listing, false) }
	a, b := lockLoop(), backgroundSearch()
	if a.callSite() == b.callSite() {
		t.Fatalf("two places, one call site: %s", a.callSite())
	}
	for which := range 2 {
		var first []*request
		for _, pending := range [][]*request{{a, b}, {b, a}} {
			inc := &incarnation{pending: slices.Clone(pending)}
			first = append(first, inc.chooseRequest(which))
		}
		if first[0] != first[1] {
			t.Errorf("draw %d: two identical calls from two places: the one that came first went first", which)
		}
	}
	if r := newCallRequest(listing, true); r.callers != nil {
		t.Errorf("a real client's call recorded where the server's goroutine was")
	}
}

// TestAnAdvanceHandsOverAWatchEventAtItsInstant holds an advance to
// handing a watch event over when the server fires it, as it hands over a
// reply that came after its step: a session that expires two seconds into
// a minute's outage deletes its nodes then, and their watchers hear of it
// then, not when the harness's step ends a minute later.
func TestAnAdvanceHandsOverAWatchEventAtItsInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &harness{heldCame: make(chan struct{}, 1)}
		inc := &incarnation{heldCame: h.heldCame, killed: make(chan struct{})}
		h.incs = []*incarnation{inc}
		start := time.Now()
		heard := make(chan time.Time, 1)
		go func() {
			time.Sleep(2 * time.Second) // the server fires the event
			if inc.awaitHandOver("NodeDeleted /lock/n") {
				heard <- time.Now()
			}
		}()
		h.sleepHandingOver(time.Minute)
		defer close(inc.killed) // a held event's goroutine ends
		select {
		case at := <-heard:
			if d := at.Sub(start); d != 2*time.Second {
				t.Fatalf("the event fired 2s into the advance reached its recipe %v into it", d)
			}
		default:
			t.Fatal("the event fired 2s into a minute's advance had not reached its recipe when the advance ended")
		}
	})
}
