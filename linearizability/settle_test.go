package linearizability_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zksim/zksim/linearizability"
)

// serverLog is a ground truth keyed by tag, with session expiries by session.
type serverLog struct {
	fates    map[string]linearizability.Fate
	expiries map[int64]time.Time
	asked    []string
}

func (l *serverLog) Fate(op linearizability.Operation, called time.Time) linearizability.Fate {
	if e, ok := op.Input.(linearizability.SessionExpiry); ok {
		if at, ok := l.expiries[e.Session]; ok {
			return linearizability.Fate{Verdict: linearizability.Applied, At: at}
		}
		return linearizability.Fate{}
	}
	l.asked = append(l.asked, op.Tag)
	return l.fates[op.Tag]
}

func TestSettle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := linearizability.NewRecorder(nil)
		start := time.Now()
		log := &serverLog{fates: map[string]linearizability.Fate{}, expiries: map[int64]time.Time{}}

		// Session 1 asks for the lock; the reply is lost. The server
		// granted it at 1s, and expired the session at 5s.
		lost := rec.CallTagged(0, "acquire-1", acquire(1))
		time.Sleep(time.Second)
		log.fates["acquire-1"] = linearizability.Fate{Verdict: linearizability.Applied, At: time.Now(), Output: ok(1)}
		time.Sleep(time.Second)
		lost.Unknown()
		// Session 3's request never reached the server.
		dropped := rec.CallTagged(2, "acquire-3", acquire(3))
		log.fates["acquire-3"] = linearizability.Fate{Verdict: linearizability.NotApplied}
		dropped.Unknown()
		// Nobody knows what became of session 4's release.
		rec.CallTagged(3, "release-4", release(4)).Unknown()
		// Between 2s and 3s session 2 tries the lock and gets it, though
		// session 1 holds it.
		try := rec.Call(1, tryLock(2))
		time.Sleep(time.Second)
		try.Return(ok(2))
		// Session 1 was last heard of at 2s; the server expired it at 4s.
		time.Sleep(time.Second)
		rec.Observe(linearizability.SessionExpiry{Session: 1}, nil, start.Add(2*time.Second), time.Time{})
		log.expiries[1] = time.Now()

		raw := rec.History()
		settled, err := rec.Settle(log)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(settled.Operations); n != len(raw.Operations)-1 {
			t.Fatalf("settled history has %d operations, want %d: the one never applied dropped", n, len(raw.Operations)-1)
		}
		for _, op := range settled.Operations {
			if op.Tag == "acquire-3" {
				t.Errorf("operation never applied is still in the history: %+v", op)
			}
		}
		acquired := settled.Operations[0]
		if acquired.Unknown() || acquired.Output != ok(1) || acquired.Call != int64(time.Second) || acquired.Return != int64(time.Second) {
			t.Errorf("acquire applied at 1s settled as %+v, want it pinned to 1s with the server's output", acquired)
		}
		if !settled.Operations[1].Unknown() {
			t.Errorf("operation the log knows nothing of was settled: %+v", settled.Operations[1])
		}
		expiry := settled.Operations[3]
		if expiry.Unknown() || expiry.Call != int64(4*time.Second) || expiry.Return != int64(4*time.Second) {
			t.Errorf("expiry at 4s settled as %d..%d", expiry.Call, expiry.Return)
		}

		// Unsettled, the lost acquire may have taken effect only after
		// everything else, so the history is legal; settled, it took
		// the lock at 1s, and session 2 got the lock while session 1
		// held it.
		for _, c := range []struct {
			h    linearizability.History
			want linearizability.Outcome
		}{{raw, linearizability.Ok}, {settled, linearizability.Illegal}} {
			res, err := linearizability.CheckMutex(c.h, 0)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != c.want {
				t.Errorf("got %v, want %v", res, c.want)
			}
		}
	})
}

func TestSettleRejectsContradictions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := linearizability.NewRecorder(nil)
		early := time.Now()
		time.Sleep(time.Second)
		rec.CallTagged(0, "x", acquire(1)).Unknown()
		log := &serverLog{fates: map[string]linearizability.Fate{"x": {Verdict: linearizability.Applied, At: early}}}
		if _, err := rec.Settle(log); err == nil || !strings.Contains(err.Error(), "before it was called") {
			t.Fatalf("got error %v, want one saying the operation was applied before it was called", err)
		}

		rec = linearizability.NewRecorder(nil)
		now := time.Now()
		rec.Observe(linearizability.SessionExpiry{Session: 1}, nil, now, now.Add(time.Second))
		log = &serverLog{expiries: map[int64]time.Time{1: now.Add(time.Hour)}}
		if _, err := rec.Settle(log); err != nil {
			t.Fatalf("observed operation with a known upper bound is not unknown, so not settled; got %v", err)
		}
	})
}
