package targets

import (
	"context"
	"time"
)

// monitor is a Java object's monitor, for the ports of Java recipes:
// synchronized (enter, exit), wait and notifyAll. It is made of channels
// so that a goroutine waiting for it is durably blocked in a synctest
// bubble (one waiting on a sync.Mutex is not, and would keep the harness
// from ever seeing the clients settle).
type monitor struct {
	held chan struct{}
	// notified is closed by notifyAll, and replaced: a wait waits on the
	// one it found.
	notified chan struct{}
}

func newMonitor() *monitor {
	return &monitor{held: make(chan struct{}, 1), notified: make(chan struct{})}
}

// enter takes the monitor, as a synchronized block begins.
func (m *monitor) enter() { m.held <- struct{}{} }

// exit lets it go.
func (m *monitor) exit() { <-m.held }

// wait is Object.wait(d) (d <= 0: wait()), with the monitor held: it lets
// the monitor go, waits for a notifyAll, the time, or ctx (Java's
// interrupt, reported as ctx's error), and takes the monitor again.
func (m *monitor) wait(ctx context.Context, d time.Duration) error {
	notified := m.notified
	m.exit()
	defer m.enter()
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-notified:
	case <-timeout:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// notifyAll wakes every wait, with the monitor held.
func (m *monitor) notifyAll() {
	close(m.notified)
	m.notified = make(chan struct{})
}
