package fuzz_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/fuzz/targets"
	"github.com/zksim/zksim/zkfake/zktest"
)

// sound is the mutants' sound queue lock with the Conn and directory it
// was made with, for the lockers below to plant their bug in.
type sound struct {
	*targets.QueueLock
	conn zktest.Conn
	dir  string
}

func newSound(conn zktest.Conn, path string) sound {
	return sound{targets.NewQueueLock(conn, path).(*targets.QueueLock), conn, path}
}

// tokenless is a sound lock that hands out no fencing token.
type tokenless struct{ l *targets.QueueLock }

func (t tokenless) Lock(ctx context.Context) error { return t.l.Lock(ctx) }
func (t tokenless) Unlock() error                  { return t.l.Unlock() }

// watchLeaker is a sound lock that, once it holds the lock, sets a watch
// on a node that never comes.
type watchLeaker struct{ sound }

func (w watchLeaker) Lock(ctx context.Context) error {
	if err := w.sound.Lock(ctx); err != nil {
		return err
	}
	_, _, _, _ = w.conn.ExistsW(w.dir + "-never")
	return nil
}

// nodeLeaker is a sound lock that leaves a persistent node next to the
// lock's directory each time it unlocks. Not in it: a name ending in ten
// digits there would be taken for a contender, and block the queue.
type nodeLeaker struct{ sound }

func (n nodeLeaker) Unlock() error {
	if err := n.sound.Unlock(); err != nil {
		return err
	}
	_, _ = n.conn.Create(n.dir+"-released-", nil, zk.FlagSequence, zktest.OpenACL)
	return nil
}

// panicker is a sound lock whose third Lock panics.
type panicker struct {
	sound
	locks int
}

func (p *panicker) Lock(ctx context.Context) error {
	if p.locks++; p.locks == 3 {
		panic("the third Lock")
	}
	return p.sound.Lock(ctx)
}

// TestDetectorsFindTheirBugs gives each detector that no mutant is for a
// lock with the bug it is about, and checks that it finds it, by name,
// within a budget.
func TestDetectorsFindTheirBugs(t *testing.T) {
	for _, c := range []struct {
		name      string
		newLocker fuzz.NewLocker
		opts      []fuzz.Option
		want      fuzz.Detector
		budget    int
	}{
		{"watch left behind", func(conn zktest.Conn, path string) fuzz.Locker {
			return watchLeaker{newSound(conn, path)}
		}, nil, fuzz.Leak, 20},
		{"node left behind", func(conn zktest.Conn, path string) fuzz.Locker {
			return nodeLeaker{newSound(conn, path)}
		}, nil, fuzz.Leak, 20},
		{"panic", func(conn zktest.Conn, path string) fuzz.Locker {
			return &panicker{sound: newSound(conn, path)}
		}, nil, fuzz.Panic, 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, cases := fuzz.Survey(t, fuzz.Lock(c.newLocker), c.opts, c.budget, 1, nil)
			if f == nil {
				t.Fatalf("not found in %d cases", c.budget)
			}
			if f.Detector != c.want {
				t.Fatalf("found by %s, want %s: %s\n%s", f.Detector, c.want, f.Summary, f.Story)
			}
			t.Logf("%s after %d cases: %s", f.Detector, cases, f.Summary)
		})
	}
}

// The lockers below never block where they should, or never stop. Each
// used to hang the harness until the test binary's timeout; each must give
// a finding, quickly.

// ctxIgnorer's Lock ignores its ctx and retries a create that fails at once
// (its parent does not exist), for ever, without pausing.
type ctxIgnorer struct{ sound }

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
type failingUnlock struct{ sound }

func (l failingUnlock) Unlock() error {
	l.Forget()
	return errors.New("this Unlock always fails")
}

// loopingUnlock's Unlock loops inside on a Delete that fails at once.
type loopingUnlock struct{ sound }

func (l loopingUnlock) Unlock() error {
	for {
		if err := l.conn.Delete(l.dir+"/missing", -1); err == nil {
			return nil
		}
	}
}

// sleepingUnlock's Unlock retries a failing Delete every 10ms, for ever:
// it blocks, on a timer, but never ends, not even once the case is over.
type sleepingUnlock struct{ sound }

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
type sessionSpinner struct{ sound }

func (l sessionSpinner) Lock(ctx context.Context) error {
	for s := l.conn.SessionID(); l.conn.SessionID() == s; {
	}
	return l.sound.Lock(ctx)
}

// poller is a sound lock that, once it holds the lock, starts a goroutine
// that checks on its node every 100ms and never stops, not even once the
// Conn is closed.
type poller struct{ sound }

func (p poller) Lock(ctx context.Context) error {
	if err := p.sound.Lock(ctx); err != nil {
		return err
	}
	conn, node := p.conn, p.Node()
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
//
// It runs alone, not in parallel: its bound is on the wall clock.
func TestNeverHang(t *testing.T) {
	queue := func(wrap func(sound) fuzz.Locker) fuzz.NewLocker {
		return func(conn zktest.Conn, path string) fuzz.Locker { return wrap(newSound(conn, path)) }
	}
	for _, c := range []struct {
		name      string
		newLocker fuzz.NewLocker
		want      fuzz.Detector
		says      []string // in the summary
	}{
		{"Lock ignores ctx and spins on a failing call", queue(func(q sound) fuzz.Locker { return ctxIgnorer{q} }), fuzz.Liveness, []string{"'s Lock"}},
		{"Unlock fails at once for ever", queue(func(q sound) fuzz.Locker { return failingUnlock{q} }), fuzz.Liveness, []string{"'s Unlock did not release"}},
		{"Unlock loops inside on a failing call", queue(func(q sound) fuzz.Locker { return loopingUnlock{q} }), fuzz.Liveness, []string{"Unlock"}},
		{"Unlock loops on a timer for ever", queue(func(q sound) fuzz.Locker { return sleepingUnlock{q} }), fuzz.Liveness, []string{"Unlock"}},
		{"Lock spins on the Conn's state", queue(func(q sound) fuzz.Locker { return sessionSpinner{q} }), fuzz.Liveness, []string{"'s Lock did not return: it spun, making 5000 calls"}},
		{"a goroutine outlives its Conn", queue(func(q sound) fuzz.Locker { return poller{q} }), fuzz.Leak, []string{"kept running after its Conn was closed", "exists " + fuzz.LockPath + "/"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Some of these lockers have other faults too (an Unlock that
			// always fails leaves a hold its next Lock re-enters): the
			// one looked for here is their hanging.
			var f *fuzz.Finding
			var cases int64
			done := make(chan struct{})
			start := time.Now()
			go func() {
				defer close(done)
				f, cases = fuzz.Survey(t, fuzz.Lock(c.newLocker), nil, 20, 1, byDetector(c.want))
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("no finding after %v of wall time", time.Since(start).Round(time.Millisecond))
			}
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
			t.Logf("%v, after %d cases: %s: %s", time.Since(start).Round(time.Millisecond), cases, f.Detector, f.Summary)
		})
	}
}
