package fuzz

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/zktest"
	"pgregory.net/rapid"
)

// The lockers below never block where they should, or never stop. Each
// used to hang the harness until the test binary's timeout; each must give
// a finding, quickly.

// ctxIgnorer's Lock ignores its ctx and retries a create that fails at once
// (its parent does not exist), for ever, without pausing.
type ctxIgnorer struct{ *queueLock }

func (l ctxIgnorer) Lock(context.Context) error {
	for {
		if _, err := l.conn.Create(l.dir+"/missing/lock", nil, zk.FlagEphemeral, zktest.OpenACL); err == nil {
			return nil
		}
	}
}

// failingUnlock's Unlock returns an error at once, for ever, without
// calling the server. It does forget the hold, so that a client that goes
// on to Lock again after the failure queues afresh (behind its own node,
// which stays for ever) rather than taking the old hold back.
type failingUnlock struct{ *queueLock }

func (l failingUnlock) Unlock() error {
	l.holding, l.token = false, 0
	return errors.New("this Unlock always fails")
}

// loopingUnlock's Unlock loops inside on a Delete that fails at once.
type loopingUnlock struct{ *queueLock }

func (l loopingUnlock) Unlock() error {
	for {
		if err := l.conn.Delete(l.dir+"/missing", -1); err == nil {
			return nil
		}
	}
}

// sleepingUnlock's Unlock retries a failing Delete every 10ms, for ever:
// it blocks, on a timer, but never ends, not even once the case is over.
type sleepingUnlock struct{ *queueLock }

func (l sleepingUnlock) Unlock() error {
	for {
		if err := l.conn.Delete(l.dir+"/missing", -1); err == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sessionSpinner's Lock busy-waits for its session to change, reading the
// Conn's session id in a loop without blocking (SessionID is not gated).
type sessionSpinner struct{ *queueLock }

func (l sessionSpinner) Lock(ctx context.Context) error {
	for s := l.conn.SessionID(); l.conn.SessionID() == s; {
	}
	return l.queueLock.Lock(ctx)
}

// poller is a sound lock that, once it holds the lock, starts a goroutine
// that checks on its node every 100ms and never stops, not even once the
// Conn is closed.
type poller struct{ *queueLock }

func (p poller) Lock(ctx context.Context) error {
	if err := p.queueLock.Lock(ctx); err != nil {
		return err
	}
	conn, node := p.conn, p.node
	go func() {
		for {
			time.Sleep(100 * time.Millisecond)
			_, _, _ = conn.Exists(node)
		}
	}()
	return nil
}

// TestNeverHang checks that lockers that spin or never stop give a
// finding naming the call they were stuck in, within seconds of wall time.
// The bound is generous (these take well under a second each): it is there
// so that a regression fails the test instead of hanging it until the test
// binary's timeout.
func TestNeverHang(t *testing.T) {
	queue := func(wrap func(*queueLock) Locker) NewLocker {
		return func(conn zktest.Conn, path string) Locker { return wrap(&queueLock{conn: conn, dir: path}) }
	}
	for _, c := range []struct {
		name      string
		newLocker NewLocker
		want      Detector
		says      []string // in the summary
	}{
		{"Lock ignores ctx and spins on a failing call", queue(func(q *queueLock) Locker { return ctxIgnorer{q} }), Liveness, []string{"'s Lock"}},
		{"Unlock fails at once for ever", queue(func(q *queueLock) Locker { return failingUnlock{q} }), Liveness, []string{"'s Unlock did not release"}},
		{"Unlock loops inside on a failing call", queue(func(q *queueLock) Locker { return loopingUnlock{q} }), Liveness, []string{"Unlock"}},
		{"Unlock loops on a timer for ever", queue(func(q *queueLock) Locker { return sleepingUnlock{q} }), Liveness, []string{"Unlock"}},
		{"Lock spins on the Conn's state", queue(func(q *queueLock) Locker { return sessionSpinner{q} }), Liveness, []string{"'s Lock did not return: it spun, making 5000 calls"}},
		{"a goroutine outlives its Conn", queue(func(q *queueLock) Locker { return poller{q} }), Leak, []string{"kept running after its Conn was closed", "exists " + lockPath + "/"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEngine(Lock(c.newLocker).subject(), Config{}.normalized())
			// Some of these lockers have other faults too (an Unlock that
			// always fails leaves a hold its next Lock re-enters): the
			// one looked for here is their hanging.
			e.survey, e.surveyFor = true, byDetector(c.want)
			done := make(chan struct{})
			start := time.Now()
			go func() {
				defer close(done)
				withRapid(t, 20, 1, func() { rapid.Check(t, e.property) })
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("no finding after %v of wall time", time.Since(start).Round(time.Millisecond))
			}
			f := e.lastFinding()
			if f == nil {
				t.Fatalf("not found in 20 cases")
			}
			if f.Detector != c.want {
				t.Fatalf("found by %s, want %s: %s", f.Detector, c.want, f.Summary)
			}
			for _, want := range c.says {
				if !strings.Contains(f.Summary, want) {
					t.Errorf("the summary lacks %q: %s", want, f.Summary)
				}
			}
			t.Logf("%v, after %d cases: %s: %s", time.Since(start).Round(time.Millisecond), e.firstFail.Load(), f.Detector, f.Summary)
		})
	}
}
