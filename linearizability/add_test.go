package linearizability_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/zksim/zksim/linearizability"
)

// TestRecorderPlacesEventsWithinAnInstant records a client's return after
// the caller's later events of the same instant, and a server's expiry
// before them, the way a harness that steps its clients learns of both.
func TestRecorderPlacesEventsWithinAnInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := linearizability.NewRecorder(nil)
		time.Sleep(time.Second)
		then := time.Now()
		call := rec.Now()
		write := rec.Now() // after the call, at the same instant
		time.Sleep(time.Second)
		later := rec.Now()
		// Learnt of afterwards: the client returned at the end of the first
		// instant, twice (two clients: they tie), and the server expired a
		// session as it began.
		ret := rec.At(then, linearizability.Last)
		other := rec.At(then, linearizability.Last)
		expired := rec.At(then, linearizability.First)
		rec.Add(0, "lock", "ok", call, ret)
		rec.Add(1, "lock", "ok", call, other)
		rec.Add(2, "write", "ok", write, write)
		rec.Add(3, "unlock", "ok", later, later)
		rec.Add(4, linearizability.SessionExpiry{Session: 1}, struct{}{}, expired, expired)
		h := rec.History()
		lock, lock2, w, unlock, expiry := h.Operations[0], h.Operations[1], h.Operations[2], h.Operations[3], h.Operations[4]
		if !(expiry.Call < lock.Call && lock.Call < w.Call && w.Call < lock.Return && lock.Return < unlock.Call) {
			t.Errorf("expiry at %d, lock %d..%d, write at %d, unlock at %d: want the expiry first, then the lock's call, the write, the lock's return, the unlock",
				expiry.Call, lock.Call, lock.Return, w.Call, unlock.Call)
		}
		if lock2.Return != lock.Return {
			t.Errorf("returns placed last at one instant got %d and %d: want them tied", lock.Return, lock2.Return)
		}
		if !ret.Time().Equal(then) || !call.Time().Equal(then) {
			t.Errorf("instants read %v and %v, want %v", ret.Time(), call.Time(), then)
		}
		if got := rec.Reading(unlock.Call); !got.Equal(then.Add(time.Second)) {
			t.Errorf("the unlock's timestamp reads %v, want %v", got, then.Add(time.Second))
		}
		for _, stamp := range []int64{expiry.Call, lock.Call, w.Call, lock.Return} {
			if got := rec.Reading(stamp); !got.Equal(then) {
				t.Errorf("timestamp %d reads %v, want %v", stamp, got, then)
			}
		}
	})
}

// TestRecorderAddUnknown records an operation whose outcome is unknown
// after the fact: it never returns, and the client goes on on a new row,
// which Client still names.
func TestRecorderAddUnknown(t *testing.T) {
	rec := linearizability.NewRecorder(nil)
	call := rec.Now()
	rec.AddUnknown(7, "release", call)
	next := rec.Now()
	rec.Add(7, "lock", "ok", next, rec.Now())
	rec.Observe(linearizability.SessionExpiry{Session: 1}, struct{}{}, call.Time(), time.Time{})
	h := rec.History()
	lost, lock, expiry := h.Operations[0], h.Operations[1], h.Operations[2]
	if !lost.Unknown() || lost.Output != nil {
		t.Errorf("the release: %+v, want an unknown outcome", lost)
	}
	if lock.ClientID == lost.ClientID {
		t.Errorf("the client carried on under porcupine id %d, the id of its unfinished operation", lock.ClientID)
	}
	for _, op := range []linearizability.Operation{lost, lock} {
		if client, ok := rec.Client(op.ClientID); !ok || client != 7 {
			t.Errorf("Client(%d) = %d, %v: want client 7", op.ClientID, client, ok)
		}
	}
	if _, ok := rec.Client(expiry.ClientID); ok {
		t.Errorf("the observed expiry's id %d belongs to a client", expiry.ClientID)
	}
}

// TestRecorderFaultAt places a fault read afterwards at its instants.
func TestRecorderFaultAt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := linearizability.NewRecorder(nil)
		start := time.Now()
		op := rec.Now()
		time.Sleep(time.Second)
		rec.Add(0, "lock", "ok", op, rec.Now())
		cut := rec.At(start, linearizability.First)
		rec.FaultAt(0, linearizability.FaultCrash, "process crashed", cut, cut)
		rec.FaultAt(-1, linearizability.FaultExpiry, "session 0x1", cut, rec.At(start.Add(time.Second), linearizability.Last))
		h := rec.History()
		crash, expiry, lock := h.Faults[0], h.Faults[1], h.Operations[0]
		if crash.ClientID != lock.ClientID || crash.Start != crash.End || crash.Start >= lock.Call {
			t.Errorf("crash %+v: want it on the lock's row (%d), before its call at %d", crash, lock.ClientID, lock.Call)
		}
		if expiry.ClientID != -1 || expiry.Start != crash.Start || expiry.End <= lock.Return {
			t.Errorf("expiry %+v: want it on no client's row, from the crash to after the lock's return at %d", expiry, lock.Return)
		}
	})
}
