package fuzz_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/fuzz/targets"
	"github.com/zksim/zksim/zkfake/zktest"
)

// newKeeper makes a sound lock with a keep-alive beside it, as a recipe's health
// check or lease renewal is: from the lock's making, a goroutine of its
// own asks the server every 500ms whether the lock's directory is there,
// until its Conn is closed. While the lock's Lock waits for a watch, the
// keep-alive's calls come on a timer with nothing changed on the server:
// the waiter does not poll, the recipe's background work does.
func newKeeper(conn zktest.Conn, path string) fuzz.Locker {
	go func() {
		for {
			time.Sleep(500 * time.Millisecond)
			_, _, err := conn.Exists(path)
			if errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrConnectionClosed) {
				return
			}
		}
	}()
	return targets.NewQueueLock(conn, path)
}

// newAfterFuncKeeper is newKeeper with its keep-alive made of timers: each
// check runs in a goroutine of its own, which time.AfterFunc starts, and
// schedules the next.
func newAfterFuncKeeper(conn zktest.Conn, path string) fuzz.Locker {
	var check func()
	check = func() {
		_, _, err := conn.Exists(path)
		if !errors.Is(err, zk.ErrClosing) && !errors.Is(err, zk.ErrConnectionClosed) {
			time.AfterFunc(500*time.Millisecond, check)
		}
	}
	time.AfterFunc(500*time.Millisecond, check)
	return targets.NewQueueLock(conn, path)
}

// helperSpinner is a spin lock that makes each of its calls on a goroutine
// of its own, as a recipe that bounds each call by a context does: it
// tries to create the lock's node and, when it is there, sleeps 100ms and
// tries again. Its waiter polls all the same.
type helperSpinner struct {
	conn zktest.Conn
	node string
}

func (l helperSpinner) Lock(ctx context.Context) error {
	for {
		answer := make(chan error, 1)
		go func() {
			_, err := l.conn.Create(l.node, nil, zk.FlagEphemeral, zktest.OpenACL)
			answer <- err
		}()
		select {
		case err := <-answer:
			if !errors.Is(err, zk.ErrNodeExists) {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (l helperSpinner) Unlock() error { return l.conn.Delete(l.node, -1) }

// flagWaiter waits for a flag node by asking for it every 100ms: a waiter
// that polls, described to the harness as a Recipe.
type flagWaiter struct {
	client fuzz.Client
	dir    string
}

func (w *flagWaiter) wait(ctx context.Context, _ *fuzz.Call) error {
	for {
		if ok, _, err := w.client.Conn.Exists(w.dir + "/flag"); err == nil && ok {
			return nil
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TestBackgroundWorkIsNoPoll holds the polling detector to the waiter's own
// calls: a sound lock with a keep-alive beside it, on a goroutine of its
// own or on timers, gives no polling finding; a spin lock still gives one
// when it makes each call on a goroutine of its own (and when it makes
// them on the caller's: TestWithoutDetectors), and so does a Recipe's op
// that polls.
func TestBackgroundWorkIsNoPoll(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		on        string
		newLocker fuzz.NewLocker
	}{{"a goroutine of its own", newKeeper}, {"timers", newAfterFuncKeeper}} {
		t.Run("a keep-alive on "+c.on, func(t *testing.T) {
			if f, cases := fuzz.Survey(t, fuzz.Lock(c.newLocker), nil, 60, 1, byDetector(fuzz.Polling)); f != nil {
				t.Fatalf("reported as polling after %d cases: %s\n%s", cases, f.Summary, f.Story)
			}
		})
	}
	t.Run("a spin lock calling on goroutines of its own", func(t *testing.T) {
		spinner := fuzz.Lock(func(conn zktest.Conn, path string) fuzz.Locker { return helperSpinner{conn, path + "/lock"} })
		if f, _ := fuzz.Survey(t, spinner, nil, 100, 1, byDetector(fuzz.Polling)); f == nil {
			t.Fatalf("no polling found in 100 cases")
		}
	})
	t.Run("a Recipe's op that polls", func(t *testing.T) {
		r := fuzz.Recipe[*flagWaiter]{
			Name: "flag-waiter",
			New: func(_ context.Context, client fuzz.Client, dir string) *flagWaiter {
				return &flagWaiter{client: client, dir: dir}
			},
			Ops: []fuzz.Op[*flagWaiter]{{Name: "Wait", Call: (*flagWaiter).wait}},
		}
		if f, _ := fuzz.Survey(t, r, nil, 100, 1, byDetector(fuzz.Polling)); f == nil {
			t.Fatalf("no polling found in 100 cases")
		}
	})
}
