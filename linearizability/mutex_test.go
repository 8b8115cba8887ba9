package linearizability_test

import (
	"strings"
	"testing"
	"time"

	"github.com/zksim/zksim/linearizability"
)

const lockPath = "/lock"

func acquire(session int64) linearizability.MutexInput {
	return linearizability.MutexInput{Op: linearizability.Acquire, Lock: lockPath, Session: session}
}

func tryLock(session int64) linearizability.MutexInput {
	return linearizability.MutexInput{Op: linearizability.TryLock, Lock: lockPath, Session: session}
}

func release(session int64) linearizability.MutexInput {
	return linearizability.MutexInput{Op: linearizability.Release, Lock: lockPath, Session: session}
}

func revoke(session int64) linearizability.MutexInput {
	return linearizability.MutexInput{Op: linearizability.Revoke, Lock: lockPath, Session: session}
}

func write(session, token int64) linearizability.MutexInput {
	return linearizability.MutexInput{Op: linearizability.Write, Lock: lockPath, Session: session, Token: token}
}

func ok(token int64) linearizability.MutexOutput {
	return linearizability.MutexOutput{OK: true, Token: token}
}

var failed = linearizability.MutexOutput{}

func TestMutexHandBuilt(t *testing.T) {
	tests := []struct {
		name string
		h    *builder
		want linearizability.Outcome
	}{
		{"holds one after the other", new(builder).
			op(0, 0, 10, acquire(1), ok(1)).
			op(0, 20, 30, release(1), ok(0)).
			op(1, 5, 40, acquire(2), ok(2)).
			op(1, 50, 60, release(2), ok(0)),
			linearizability.Ok},
		{"two holders at once", new(builder).
			op(0, 0, 10, acquire(1), ok(0)).
			op(1, 20, 30, acquire(2), ok(0)).
			op(0, 40, 50, release(1), ok(0)),
			linearizability.Illegal},
		{"acquire concurrent with the release it waited for", new(builder).
			op(0, 0, 10, acquire(1), ok(0)).
			op(0, 20, 40, release(1), ok(0)).
			op(1, 15, 30, acquire(2), ok(0)),
			linearizability.Ok},
		{"tokens must grow", new(builder).
			op(0, 0, 10, acquire(1), ok(5)).
			op(0, 20, 30, release(1), ok(0)).
			op(1, 40, 50, acquire(2), ok(5)),
			linearizability.Illegal},
		{"try-lock fails while held", new(builder).
			op(0, 0, 10, acquire(1), ok(0)).
			op(1, 20, 30, tryLock(2), failed),
			linearizability.Ok},
		{"try-lock fails while free", new(builder).
			op(1, 20, 30, tryLock(2), failed),
			linearizability.Illegal},
		{"try-lock fails concurrently with a release", new(builder).
			op(0, 0, 10, acquire(1), ok(0)).
			op(0, 20, 40, release(1), ok(0)).
			op(1, 30, 50, tryLock(2), failed),
			linearizability.Ok},
		{"release by a session that does not hold the lock", new(builder).
			op(0, 0, 10, acquire(1), ok(0)).
			op(1, 20, 30, release(2), ok(0)),
			linearizability.Illegal},
		{"failed release after the session expired", new(builder).
			op(0, 0, 10, acquire(1), ok(0)).
			expire(1, 20, 20).
			op(0, 30, 40, release(1), failed),
			linearizability.Ok},
		{"failed release while holding", new(builder).
			op(0, 0, 10, acquire(1), ok(0)).
			op(0, 30, 40, release(1), failed),
			linearizability.Illegal},
		{"acquire that gave up constrains nothing", new(builder).
			op(0, 0, 10, acquire(1), ok(0)).
			op(1, 5, 30, acquire(2), failed),
			linearizability.Ok},
		{"expired session cannot take the lock", new(builder).
			expire(1, 5, 5).
			op(0, 10, 20, acquire(1), ok(0)),
			linearizability.Illegal},
		{"expiry ends the hold", new(builder).
			op(0, 0, 10, acquire(1), ok(1)).
			expire(1, 20, 20).
			op(1, 15, 30, acquire(2), ok(2)),
			linearizability.Ok},
		{"hold survives until expiry", new(builder).
			op(0, 0, 10, acquire(1), ok(1)).
			expire(1, 40, 40).
			op(1, 15, 30, acquire(2), ok(2)),
			linearizability.Illegal},
		{"expiry bounded by what the client saw", new(builder).
			op(0, 0, 10, acquire(1), ok(1)).
			expire(1, 12, 60).
			op(1, 15, 30, acquire(2), ok(2)),
			linearizability.Ok},
		{"a revoked hold lets the next one in", new(builder).
			op(0, 0, 10, acquire(1), ok(1)).
			op(2, 20, 20, revoke(1), ok(0)).
			op(1, 15, 30, acquire(2), ok(2)).
			op(1, 32, 35, release(2), ok(0)).
			op(0, 40, 50, acquire(1), ok(3)),
			linearizability.Ok},
		{"a revoke ends only the holder's hold", new(builder).
			op(0, 0, 10, acquire(1), ok(1)).
			op(2, 20, 20, revoke(3), ok(0)).
			op(1, 25, 30, acquire(2), ok(2)),
			linearizability.Illegal},
		{"locks are independent", new(builder).
			op(0, 0, 10, acquire(1), ok(0)).
			op(1, 20, 30, linearizability.MutexInput{Op: linearizability.Acquire, Lock: "/other", Session: 2}, ok(0)),
			linearizability.Ok},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantOutcome(t, checkMutex(t, tt.h.h), tt.want)
		})
	}
}

// pausedHolder is the classic unsafe case: session 1 takes the lock, its
// process pauses past the session timeout, the session expires, session 2
// takes the lock and writes, and then the paused process wakes and writes
// too, believing it still holds the lock.
func pausedHolder(firstToken, secondToken int64, staleWrite linearizability.MutexOutput) *builder {
	return new(builder).
		op(0, 0, 10, acquire(1), ok(1)).
		expire(1, 50, 50).
		op(1, 40, 70, acquire(2), ok(2)).
		op(1, 80, 90, write(2, secondToken), ok(0)).
		op(0, 100, 110, write(1, firstToken), staleWrite)
}

func TestMutexPausedHolder(t *testing.T) {
	t.Run("unfenced write is illegal", func(t *testing.T) {
		wantOutcome(t, checkMutex(t, pausedHolder(0, 0, ok(0)).h), linearizability.Illegal)
	})
	t.Run("fenced resource rejects the stale token", func(t *testing.T) {
		wantOutcome(t, checkMutex(t, pausedHolder(1, 2, failed).h), linearizability.Ok)
	})
	t.Run("fenced resource that accepts the stale token", func(t *testing.T) {
		wantOutcome(t, checkMutex(t, pausedHolder(1, 2, ok(0)).h), linearizability.Illegal)
	})
	t.Run("fenced resource that rejects a fresh token", func(t *testing.T) {
		h := new(builder).
			op(0, 0, 10, acquire(1), ok(1)).
			op(0, 20, 30, write(1, 1), failed)
		wantOutcome(t, checkMutex(t, h.h), linearizability.Illegal)
	})
	t.Run("stale token before the newer one reaches the resource", func(t *testing.T) {
		// Fencing only orders what reaches the resource: a paused
		// holder's write that arrives before its successor's first write
		// is accepted, and that is legal.
		h := new(builder).
			op(0, 0, 10, acquire(1), ok(1)).
			expire(1, 50, 50).
			op(1, 40, 70, acquire(2), ok(2)).
			op(0, 75, 78, write(1, 1), ok(0)).
			op(1, 80, 90, write(2, 2), ok(0))
		wantOutcome(t, checkMutex(t, h.h), linearizability.Ok)
	})
}

func TestMutexUnknownOutcomes(t *testing.T) {
	t.Run("crashed acquirer holds the lock until its session expires", func(t *testing.T) {
		h := new(builder).
			op(0, 0, 0, acquire(1), nil).
			op(1, 20, 30, tryLock(2), failed).
			expire(1, 50, 50).
			op(1, 40, 70, acquire(2), ok(0))
		wantOutcome(t, checkMutex(t, h.h), linearizability.Ok)
	})
	t.Run("crashed acquirer whose session never expires", func(t *testing.T) {
		h := new(builder).
			op(0, 0, 0, acquire(1), nil).
			op(1, 20, 30, tryLock(2), failed).
			op(1, 40, 70, acquire(2), ok(0))
		wantOutcome(t, checkMutex(t, h.h), linearizability.Illegal)
	})
	t.Run("unknown acquire may never have happened", func(t *testing.T) {
		h := new(builder).
			op(0, 0, 0, acquire(1), nil).
			op(1, 20, 30, acquire(2), ok(0)).
			op(1, 40, 50, release(2), ok(0))
		wantOutcome(t, checkMutex(t, h.h), linearizability.Ok)
	})
	t.Run("unknown release", func(t *testing.T) {
		h := new(builder).
			op(0, 0, 10, acquire(1), ok(0)).
			op(0, 20, 0, release(1), nil).
			op(1, 30, 40, acquire(2), ok(0))
		wantOutcome(t, checkMutex(t, h.h), linearizability.Ok)
	})
}

func TestCheckMutexRejectsForeignInput(t *testing.T) {
	h := new(builder).op(0, 0, 10, "acquire", ok(0))
	if _, err := linearizability.CheckMutex(h.h, time.Second); err == nil || !strings.Contains(err.Error(), "string") {
		t.Fatalf("got error %v, want one naming the input type", err)
	}
	h = new(builder).op(0, 0, 10, acquire(1), true)
	if _, err := linearizability.CheckMutex(h.h, time.Second); err == nil {
		t.Fatal("got no error for an output of the wrong type")
	}
	h = new(builder).op(0, 0, 10, linearizability.MutexInput{Op: 77}, ok(0))
	if _, err := linearizability.CheckMutex(h.h, time.Second); err == nil {
		t.Fatal("got no error for an unknown operation")
	}
}
