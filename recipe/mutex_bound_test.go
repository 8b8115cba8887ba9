package recipe

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// A bound behaves as context.WithTimeout would, arming after arming: done
// at its deadline and not before, open again for the next arming once an
// earlier one's deadline closed it, and never closed by an earlier
// arming's timer.
func TestBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b bound
		isDone := func(ctx context.Context) bool {
			select {
			case <-ctx.Done():
				return true
			default:
				return false
			}
		}

		// An arming that ends by its deadline.
		ctx := b.arm(time.Second)
		if d, ok := ctx.Deadline(); !ok || !d.Equal(time.Now().Add(time.Second)) {
			t.Errorf("Deadline = %v, %v; want a second from now", d, ok)
		}
		if isDone(ctx) || ctx.Err() != nil {
			t.Fatal("done at once")
		}
		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		if isDone(ctx) || ctx.Err() != nil {
			t.Fatal("done before its deadline")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if !isDone(ctx) || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("not done at its deadline: Err = %v", ctx.Err())
		}
		b.disarm()

		// The next arming is open again, and ends by its own deadline.
		ctx = b.arm(2 * time.Second)
		if isDone(ctx) || ctx.Err() != nil {
			t.Fatal("a new arming is done at once")
		}
		time.Sleep(time.Second)
		if isDone(ctx) {
			t.Fatal("done before its deadline")
		}
		b.disarm()

		// Disarmed before its deadline: the timer does not close the
		// next arming's channel at the old deadline.
		ctx = b.arm(5 * time.Second)
		<-time.After(3 * time.Second)
		synctest.Wait()
		if isDone(ctx) {
			t.Fatal("closed by an earlier arming's timer")
		}
		// Err alone, without Done, sees the deadline too.
		time.Sleep(2 * time.Second)
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err = %v at the deadline", ctx.Err())
		}
		if !isDone(ctx) {
			t.Fatal("Done open after Err reported the deadline")
		}
		b.disarm()
		if ctx.Value("key") != nil {
			t.Error("a bound carries no values")
		}
	})
}
