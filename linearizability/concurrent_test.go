package linearizability_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zksim/zksim/linearizability"
)

// lockScenario configures goroutines contending for a lock stand-in.
type lockScenario struct {
	racy   bool // the lock lets two sessions in
	fenced bool // the resource checks tokens
	// pause makes client 0 pause while holding the lock, past its session
	// timeout, and then write.
	pause bool
	// crash makes client 1 crash right after the service granted it the
	// lock, before it learns so.
	crash bool
}

// sessionTimeout is how long the server waits before it expires the session
// of a client that stopped talking to it.
const sessionTimeout = 50 * time.Millisecond

// recordLock runs four clients against a lock stand-in inside a synctest
// bubble and returns the recorded history.
func recordLock(t *testing.T, sc lockScenario) linearizability.History {
	var h linearizability.History
	synctest.Test(t, func(t *testing.T) {
		rec := linearizability.NewRecorder(nil)
		svc := newLockService()
		svc.racy = sc.racy
		res := &resource{fenced: sc.fenced}
		var nextSession int64
		var sessionMu sync.Mutex
		newSession := func() int64 {
			sessionMu.Lock()
			defer sessionMu.Unlock()
			nextSession++
			return nextSession
		}
		// expireLater is the server's session tracker noticing that a
		// session went silent.
		var wg sync.WaitGroup
		expireLater := func(session int64) {
			wg.Go(func() {
				time.Sleep(sessionTimeout)
				svc.expire(session)
				now := time.Now()
				rec.Observe(linearizability.SessionExpiry{Session: session}, nil, now, now)
			})
		}
		for client := range 4 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(client), 1))
				think := func() { time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond) }
				session := newSession()
				crashed, paused := false, false
				for i := range 15 {
					in := linearizability.MutexInput{Op: linearizability.Acquire, Lock: "/lock", Session: session}
					if rng.IntN(4) == 0 {
						in.Op = linearizability.TryLock
					}
					op := rec.Call(client, in)
					var token int64
					var got bool
					if in.Op == linearizability.TryLock {
						token, got = svc.take(session)
					} else {
						token, got = svc.acquire(session)
					}
					if sc.crash && client == 1 && i >= 5 && got && !crashed {
						crashed = true
						rec.Fault(client, linearizability.FaultCrash, "crashed before the reply")
						op.Unknown()
						expireLater(session)
						session = newSession()
						continue
					}
					op.Return(linearizability.MutexOutput{OK: got, Token: token})
					if !got {
						think()
						continue
					}
					think()
					if sc.pause && client == 0 && i >= 3 && !paused {
						paused = true
						end := rec.Fault(client, linearizability.FaultExpiry, "paused past the session timeout")
						expireLater(session)
						time.Sleep(2 * sessionTimeout)
						end()
					}
					writeToken := int64(0)
					if sc.fenced {
						writeToken = token
					}
					op = rec.Call(client, linearizability.MutexInput{Op: linearizability.Write, Lock: "/lock", Session: session, Token: writeToken})
					think()
					op.Return(linearizability.MutexOutput{OK: res.write(writeToken)})
					think()
					op = rec.Call(client, linearizability.MutexInput{Op: linearizability.Release, Lock: "/lock", Session: session})
					released := svc.release(session)
					op.Return(linearizability.MutexOutput{OK: released})
					if !released {
						// The session expired under us: carry on with a
						// new one, as go-zookeeper does.
						session = newSession()
					}
					think()
				}
			})
		}
		wg.Wait()
		h = rec.History()
	})
	return h
}

func TestMutexRecordedFromGoroutines(t *testing.T) {
	tests := []struct {
		name string
		sc   lockScenario
		want linearizability.Outcome
	}{
		{"correct lock, unfenced resource", lockScenario{}, linearizability.Ok},
		{"correct lock, fenced resource", lockScenario{fenced: true}, linearizability.Ok},
		{"crashed client holds the lock until its session expires", lockScenario{crash: true, fenced: true}, linearizability.Ok},
		{"paused holder writes an unfenced resource", lockScenario{pause: true}, linearizability.Illegal},
		{"paused holder's stale token is refused", lockScenario{pause: true, fenced: true}, linearizability.Ok},
		{"lock that lets two sessions in", lockScenario{racy: true, fenced: true}, linearizability.Illegal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := recordLock(t, tt.sc)
			res := checkMutex(t, h)
			wantOutcome(t, res, tt.want)
			if tt.sc.crash && res.UnknownOperations == 0 {
				t.Errorf("crash scenario recorded no operation with an unknown outcome: %v", res)
			}
		})
	}
}

// recordZnodes runs clients doing random znode operations against the
// stand-in inside a synctest bubble. Client 0 creates its own znode and
// reads it back first; halfway through, client 1's session expires.
func recordZnodes(t *testing.T, readInitial bool) (linearizability.History, []linearizability.Znode) {
	var h linearizability.History
	initial := standInInitial()
	synctest.Test(t, func(t *testing.T) {
		rec := linearizability.NewRecorder(nil)
		zk := newZKStandIn(rand.New(rand.NewPCG(7, 7)), initial)
		zk.readInitial = readInitial
		var wg sync.WaitGroup
		for client := range 4 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(client), 2))
				session := int64(100 + client)
				do := func(in linearizability.ZnodeInput) {
					op := rec.Call(client, in)
					time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
					out := zk.do(in)
					time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
					op.Return(out)
				}
				own := fmt.Sprintf("/t/a/own%d", client)
				do(linearizability.ZnodeInput{Op: linearizability.Create, Session: session, Path: own, Data: "mine"})
				do(linearizability.ZnodeInput{Op: linearizability.Get, Session: session, Path: own})
				for i := range 40 {
					if client == 1 && i == 20 {
						zk.expire(session)
						now := time.Now()
						rec.Observe(linearizability.SessionExpiry{Session: session}, nil, now, now)
						rec.Fault(client, linearizability.FaultExpiry, "server expired the session")
						session += 1000
					}
					in := randomZnodeInput(rng, session)
					do(in)
					time.Sleep(time.Duration(rng.IntN(1000)) * time.Microsecond)
				}
			})
		}
		wg.Wait()
		h = rec.History()
	})
	return h, initialZnodes(initial, testDirs...)
}

func TestZnodesRecordedFromGoroutines(t *testing.T) {
	t.Run("stand-in with stale reads", func(t *testing.T) {
		h, initial := recordZnodes(t, false)
		wantOutcome(t, checkZnodes(t, h, initial...), linearizability.Ok)
	})
	t.Run("stand-in whose reads ignore the session's own writes", func(t *testing.T) {
		h, initial := recordZnodes(t, true)
		wantOutcome(t, checkZnodes(t, h, initial...), linearizability.Illegal)
	})
}
