package difftest

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/zktest"
)

// session is one session of a run: its connection and the events its
// callback received since the runner last looked.
type session struct {
	label   string
	conn    zktest.Conn
	mu      sync.Mutex
	events  []zk.Event
	ready   chan struct{} // closed at the first StateHasSession
	drained chan struct{} // closed when the event channel is closed
	closed  bool
	once    sync.Once
}

func (s *session) onEvent(ev zk.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, ev)
	if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
		s.once.Do(func() { close(s.ready) })
	}
}

func (s *session) take() []zk.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	evs := s.events
	s.events = nil
	return evs
}

// awaitSession waits until the session's events since the last take hold
// StateHasSession (or StateExpired): the client is back. A Sync then lets
// the events its reconnect caused (watches the server fired on the
// client's setWatches) arrive, as they come before the Sync's reply.
func (s *session) awaitSession(base string) error {
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		back := slices.ContainsFunc(s.events, func(ev zk.Event) bool {
			return ev.Type == zk.EventSession && (ev.State == zk.StateHasSession || ev.State == zk.StateExpired)
		})
		s.mu.Unlock()
		if back {
			if _, err := s.conn.Sync(base); err != nil {
				return fmt.Errorf("%w: %s: Sync after the reconnect: %v", errInconclusive, s.label, err)
			}
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("%w: %s: not reconnected %v after its connection closed", errInconclusive, s.label, waitLimit)
}

// close closes the session and waits until the client has finished: its
// watches ended and its event channel closed.
func (s *session) close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.conn.Close()
	select {
	case <-s.drained:
		return nil
	case <-time.After(waitLimit):
		return fmt.Errorf("%w: %s: event channel still open %v after Close", errInconclusive, s.label, waitLimit)
	}
}
