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

type realClock struct{}

func (realClock) Now() time.Time                            { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) timer { return time.AfterFunc(d, f) }

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
	mu     sync.Mutex
	now    time.Time
	seq    int
	timers timerHeap
}

type manualTimer struct {
	clock *manualClock
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
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &manualTimer{clock: c, when: c.now.Add(d), seq: c.seq, f: f}
	heap.Push(&c.timers, t)
	return t
}

func (t *manualTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&c.timers, t.index)
	return true
}

// advance runs the timers due by now+d one at a time, without holding the
// clock's lock, so that they may set or stop timers themselves.
func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	for len(c.timers) > 0 && !c.timers[0].when.After(target) {
		t := heap.Pop(&c.timers).(*manualTimer)
		c.now = t.when
		c.mu.Unlock()
		t.f()
		c.mu.Lock()
	}
	c.now = target
	c.mu.Unlock()
}

type timerHeap []*manualTimer

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
	t := x.(*manualTimer)
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
