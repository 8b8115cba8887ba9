package recipe

import (
	"context"
	"sync"
	"time"
)

// bound is the context of Unlock: done once the retry timeout has passed
// since the call. context.WithTimeout for every Unlock was five
// allocations and a tenth of what an uncontended Lock and Unlock cost on
// the fake; a handle's bound is made once and armed afresh by each Unlock
// that holds the handle's gate, which only one call holds at a time. Its
// Done channel is kept from one arming to the next until the deadline
// closes it, and its timer runs only while an arming has asked for Done.
//
// Nothing keeps the context beyond its Unlock: the Unlock disarms it
// before it leaves the gate.
type bound struct {
	mu       sync.Mutex
	deadline time.Time
	done     chan struct{} // nil until Done is called; closed at the deadline
	err      error         // context.DeadlineExceeded once the deadline has passed
	timer    *time.Timer   // runs expire; made by the first arming that needs it
	timing   bool          // the timer is set for this arming
}

var _ context.Context = (*bound)(nil)

// arm starts an arming that ends after d, and returns the bound as its
// context.
func (b *bound) arm(d time.Duration) context.Context {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		// Closed by an earlier arming's deadline: this one needs an
		// open channel.
		b.done, b.err = nil, nil
	}
	b.deadline = time.Now().Add(d)
	return b
}

// disarm ends the arming: its timer is stopped.
func (b *bound) disarm() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.timing {
		b.timer.Stop()
		b.timing = false
	}
}

// expire closes Done if the deadline has passed. The timer of an earlier
// arming may run it late, after Stop or Reset: it finds the deadline of a
// later arming ahead and does nothing, or, between armings, closes a
// channel that the next arming replaces.
func (b *bound) expire() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expireLocked()
}

func (b *bound) expireLocked() {
	if b.err == nil && !time.Now().Before(b.deadline) {
		b.err = context.DeadlineExceeded
		if b.done != nil {
			close(b.done)
		}
	}
}

// Deadline returns the arming's deadline.
func (b *bound) Deadline() (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.deadline, true
}

// Done returns a channel that is closed at the deadline, setting the
// timer that closes it.
func (b *bound) Done() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done == nil {
		b.done = make(chan struct{})
		if b.err != nil {
			close(b.done)
		}
	}
	if b.err == nil && !b.timing {
		d := time.Until(b.deadline)
		if b.timer == nil {
			b.timer = time.AfterFunc(d, b.expire)
		} else {
			b.timer.Reset(d)
		}
		b.timing = true
	}
	return b.done
}

// Err returns context.DeadlineExceeded once the deadline has passed, and
// nil before.
func (b *bound) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expireLocked()
	return b.err
}

// Value returns nil: the bound carries no values.
func (b *bound) Value(any) any { return nil }
