package zkfake

import (
	"container/heap"
	"sync"
	"time"
)

// clock is where the server takes its time from and sets its timers:
// the time package by default (virtual inside a testing/synctest bubble),
// or a manual clock that only FastForward moves.
type clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) timer
}

// timer is a pending callback; Stop cancels it.
type timer interface {
	Stop() bool
}

// orderedClock is the default clock: the time package's time (virtual in a
// testing/synctest bubble), with the server's timers kept in one queue and
// run from a single time.Timer, in deadline order and, for equal deadlines,
// in the order they were set. Separate time.AfterFunc timers falling due at
// the same instant — common in virtual time — would run as goroutines in an
// order the scheduler picks, and a seeded scenario would not replay exactly.
type orderedClock struct {
	// start is when the clock was made, with the monotonic reading that
	// time.Now takes outside a bubble; see Now.
	start time.Time
	queue timerQueue
	mu    sync.Mutex
	wake  *time.Timer // fires at the earliest deadline
	at    time.Time   // when wake fires; zero if it is not set
}

// newOrderedClock returns an orderedClock that starts now.
func newOrderedClock() *orderedClock { return &orderedClock{start: time.Now()} }

// Now is time.Now, read more cheaply: every write asks for the time, and
// time.Now reads two clocks where time.Since reads one — the monotonic
// one — when start has a monotonic reading (outside a bubble). Inside a
// bubble time has no monotonic reading and Since falls back to wall-clock
// arithmetic, which gives the bubble's time exactly, whichever side of the
// bubble's edge the clock was made on.
func (c *orderedClock) Now() time.Time { return c.start.Add(time.Since(c.start)) }

func (c *orderedClock) AfterFunc(d time.Duration, f func()) timer {
	t := c.queue.push(time.Now().Add(d), f)
	c.arm()
	return t
}

// arm sets the wake-up timer for the earliest deadline, if that is sooner
// than the one set.
func (c *orderedClock) arm() {
	when, ok := c.queue.earliest()
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && !when.Before(c.at) {
		return
	}
	if c.wake != nil {
		c.wake.Stop()
	}
	c.at = when
	c.wake = time.AfterFunc(time.Until(when), c.fire)
}

// fire runs every timer now due, one after another, then sets the wake-up
// for the next.
func (c *orderedClock) fire() {
	c.mu.Lock()
	c.at = time.Time{}
	c.mu.Unlock()
	for {
		t := c.queue.popDue(time.Now())
		if t == nil {
			break
		}
		t.f()
	}
	c.arm()
}

// timerQueue is a queue of timers by deadline, then by the order they were
// set.
type timerQueue struct {
	mu     sync.Mutex
	seq    int
	timers timerHeap
}

func (q *timerQueue) push(when time.Time, f func()) *queuedTimer {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seq++
	t := &queuedTimer{queue: q, when: when, seq: q.seq, f: f}
	heap.Push(&q.timers, t)
	return t
}

func (q *timerQueue) earliest() (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.timers) == 0 {
		return time.Time{}, false
	}
	return q.timers[0].when, true
}

// popDue removes and returns the first timer due by now, or nil.
func (q *timerQueue) popDue(now time.Time) *queuedTimer {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.timers) == 0 || q.timers[0].when.After(now) {
		return nil
	}
	return heap.Pop(&q.timers).(*queuedTimer)
}

// WithManualClock makes the server keep its own time, starting at start,
// which moves only when FastForward is called. Session timeouts, reconnect
// rounds and TTL and container reaping then happen inside FastForward, in
// order, on the caller's goroutine. It is for programs that cannot run
// inside a testing/synctest bubble and want time they control; tests are
// simpler under synctest with the default clock.
func WithManualClock(start time.Time) Option {
	return func(c *config) { c.manual = &manualClock{now: start} }
}

// FastForward moves a manual clock forward by d, running every timer that
// falls due, in time order. It returns false, doing nothing, on a server
// without a manual clock.
func (s *Server) FastForward(d time.Duration) bool {
	if s.cfg.manual == nil {
		return false
	}
	s.cfg.manual.advance(d)
	return true
}

// manualClock is a clock moved by hand.
type manualClock struct {
	mu    sync.Mutex
	now   time.Time
	queue timerQueue
}

// queuedTimer is a timer of a timerQueue.
type queuedTimer struct {
	queue *timerQueue
	when  time.Time
	seq   int // breaks ties in the order timers were set
	f     func()
	index int // position in the heap; -1 once fired or stopped
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) AfterFunc(d time.Duration, f func()) timer {
	return c.queue.push(c.Now().Add(d), f)
}

func (t *queuedTimer) Stop() bool {
	q := t.queue
	q.mu.Lock()
	defer q.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&q.timers, t.index)
	return true
}

// advance runs the timers due by now+d one at a time, without holding the
// clock's lock, so that they may set or stop timers themselves.
func (c *manualClock) advance(d time.Duration) {
	target := c.Now().Add(d)
	for {
		t := c.queue.popDue(target)
		if t == nil {
			break
		}
		c.mu.Lock()
		c.now = t.when
		c.mu.Unlock()
		t.f()
	}
	c.mu.Lock()
	c.now = target
	c.mu.Unlock()
}

type timerHeap []*queuedTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].when.Equal(h[j].when) {
		return h[i].when.Before(h[j].when)
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*queuedTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	t.index = -1
	*h = old[:len(old)-1]
	return t
}
