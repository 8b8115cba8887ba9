package linearizability_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zksim/zksim/linearizability"
)

func TestRecorderKeepsRealOrderWithinAnInstant(t *testing.T) {
	var h linearizability.History
	synctest.Test(t, func(t *testing.T) {
		rec := linearizability.NewRecorder(nil)
		handoff := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			op := rec.Call(0, "first")
			op.Return("done")
			close(handoff)
		})
		wg.Go(func() {
			<-handoff // no virtual time passes
			op := rec.Call(1, "second")
			op.Return("done")
		})
		wg.Wait()
		h = rec.History()
	})
	first, second := h.Operations[0], h.Operations[1]
	if first.Input != "first" {
		first, second = second, first
	}
	if !(first.Call < first.Return && first.Return < second.Call && second.Call < second.Return) {
		t.Fatalf("first %d..%d, second %d..%d: want strictly ordered, the first returning before the second is called",
			first.Call, first.Return, second.Call, second.Return)
	}
	if first.ClientID == second.ClientID {
		t.Fatalf("both clients got porcupine id %d", first.ClientID)
	}
}

func TestRecorderUsesVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := linearizability.NewRecorder(nil)
		op := rec.Call(0, "slow")
		time.Sleep(time.Second)
		op.Return("done")
		got := rec.History().Operations[0]
		if d := time.Duration(got.Return - got.Call); d != time.Second {
			t.Fatalf("operation took %v of virtual time, want 1s", d)
		}
	})
}

// steppingClock is a clock that advances by a fixed step on every reading.
type steppingClock struct {
	now  time.Time
	step time.Duration
}

func (c *steppingClock) Now() time.Time {
	c.now = c.now.Add(c.step)
	return c.now
}

func TestRecorderCustomClock(t *testing.T) {
	clock := &steppingClock{now: time.Unix(1000, 0), step: time.Millisecond}
	rec := linearizability.NewRecorder(clock)
	rec.Call(0, "x").Return("y")
	op := rec.History().Operations[0]
	if op.Call != int64(time.Millisecond) || op.Return != int64(2*time.Millisecond) {
		t.Fatalf("got call %d return %d, want 1ms and 2ms after the recorder started", op.Call, op.Return)
	}
}

func TestRecorderUnknownOutcome(t *testing.T) {
	rec := linearizability.NewRecorder(nil)
	lost := rec.Call(3, "lost")
	lost.Unknown()
	lost.Return("too late") // ignored: the outcome was already declared unknown
	rec.Call(3, "next").Return("ok")
	pending := rec.Call(4, "pending")
	_ = pending
	h := rec.History()
	got, next, open := h.Operations[0], h.Operations[1], h.Operations[2]
	if !got.Unknown() || got.Output != nil {
		t.Errorf("lost operation: return %d output %v, want Never and nil", got.Return, got.Output)
	}
	if next.ClientID == got.ClientID {
		t.Errorf("client carried on under porcupine id %d, the id of its unfinished operation", next.ClientID)
	}
	if next.Unknown() || next.Output != "ok" {
		t.Errorf("next operation: %+v, want a known outcome", next)
	}
	if !open.Unknown() {
		t.Errorf("operation still in flight: %+v, want an unknown outcome", open)
	}
}

func TestRecorderObserveBrackets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := linearizability.NewRecorder(nil)
		start := time.Now()
		before := rec.Call(0, "before")
		time.Sleep(time.Second / 2)
		before.Return("ok")
		time.Sleep(time.Second / 2)
		during := rec.Call(1, "during") // at 1s: the same instant as from
		time.Sleep(time.Second)
		during.Return("ok")
		time.Sleep(time.Second)
		after := rec.Call(0, "after") // at 3s
		after.Return("ok")
		rec.Observe(linearizability.SessionExpiry{Session: 1}, nil, start.Add(time.Second), start.Add(2*time.Second))
		rec.Observe(linearizability.SessionExpiry{Session: 2}, nil, start.Add(2500*time.Millisecond), time.Time{})
		h := rec.History()
		b, d, a, bounded, open := h.Operations[0], h.Operations[1], h.Operations[2], h.Operations[3], h.Operations[4]
		if !(b.Return < bounded.Call && d.Call >= bounded.Call && d.Call <= bounded.Return && bounded.Return < a.Call) {
			t.Errorf("expiry observed within [1s, 2s] got %d..%d; before returned %d, during called %d, after called %d",
				bounded.Call, bounded.Return, b.Return, d.Call, a.Call)
		}
		if !open.Unknown() || !(d.Return < open.Call && open.Call < a.Call) {
			t.Errorf("expiry observed after 2.5s with no upper bound got %d..%d; during returned %d, after called %d",
				open.Call, open.Return, d.Return, a.Call)
		}
		clientIDs := map[int]bool{b.ClientID: true, d.ClientID: true, a.ClientID: true}
		if bounded.ClientID == open.ClientID || clientIDs[bounded.ClientID] || clientIDs[open.ClientID] {
			t.Errorf("observed operations got porcupine ids %d and %d, want fresh ones", bounded.ClientID, open.ClientID)
		}
	})
}

func TestRecorderFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := linearizability.NewRecorder(nil)
		op := rec.Call(2, "read")
		heal := rec.Fault(2, linearizability.FaultPartition, "client 2 cut off")
		time.Sleep(time.Second)
		heal()
		op.Unknown()
		rec.Fault(-1, linearizability.FaultExpiry, "session 0x1")
		h := rec.History()
		if len(h.Faults) != 2 {
			t.Fatalf("got %d faults, want 2", len(h.Faults))
		}
		partition, expiry := h.Faults[0], h.Faults[1]
		if partition.ClientID != h.Operations[0].ClientID || partition.Kind != linearizability.FaultPartition {
			t.Errorf("partition %+v: want it on client %d's row", partition, h.Operations[0].ClientID)
		}
		if time.Duration(partition.End-partition.Start) < time.Second {
			t.Errorf("partition lasted %v, want 1s", time.Duration(partition.End-partition.Start))
		}
		if expiry.ClientID != -1 {
			t.Errorf("expiry %+v: want no client", expiry)
		}
	})
}
