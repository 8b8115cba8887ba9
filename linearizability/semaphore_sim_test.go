package linearizability_test

import (
	"fmt"

	"github.com/zksim/zksim/linearizability"
)

// semService is a counting semaphore service: leases named by their
// nodes, at most max of them at once. It needs no locking: only the
// simulator uses it.
type semService struct {
	max     int
	leases  map[string]int64 // lease → session
	seq     int
	expired map[int64]bool
	// lax hands out one lease too many: a broken semaphore.
	lax bool
}

func newSemService(max int, lax bool) *semService {
	return &semService{max: max, leases: map[string]int64{}, expired: map[int64]bool{}, lax: lax}
}

func (m *semService) take(session int64) (string, bool) {
	limit := m.max
	if m.lax {
		limit++
	}
	if len(m.leases) >= limit || m.expired[session] {
		return "", false
	}
	m.seq++
	lease := fmt.Sprintf("lease-%010d", m.seq)
	m.leases[lease] = session
	return lease, true
}

func (m *semService) release(session int64, lease string) bool {
	if holder, held := m.leases[lease]; !held || holder != session {
		return false
	}
	delete(m.leases, lease)
	return true
}

func (m *semService) expire(session int64) {
	m.expired[session] = true
	for lease, holder := range m.leases {
		if holder == session {
			delete(m.leases, lease)
		}
	}
}

// simulateSemaphore simulates clients taking a lease of a semaphore of max
// leases and giving it back, until the history holds ops operations of
// which unknown have an unknown outcome. Some acquisitions are tries, which
// answer OK false when no lease is free; the rest wait. An acquisition's
// input names its lease once the service has handed one out. With lax,
// the service hands out one lease too many.
func simulateSemaphore(seed uint64, ops, unknown, max int, lax bool) linearizability.History {
	s := newSimulation(seed, 5, ops, unknown)
	svc := newSemService(max, lax)
	holding := map[*simClient]string{} // client → its lease
	trying := map[*simClient]bool{}
	for len(s.history.Operations) < ops {
		s.now++
		s.expireDue(svc.expire)
		c := s.clients[s.rng.IntN(len(s.clients))]
		if s.now < c.busyUntil {
			continue
		}
		if c.pending == nil {
			in := linearizability.SemaphoreInput{Op: linearizability.LeaseAcquire, Semaphore: "/sem", Max: max, Session: c.session}
			if lease, held := holding[c]; held {
				in.Op, in.Lease = linearizability.LeaseRelease, lease
			}
			trying[c] = s.rng.IntN(3) == 0
			s.call(c, in)
			continue
		}
		in := c.pending.Input.(linearizability.SemaphoreInput)
		var out linearizability.SemaphoreOutput
		switch {
		case s.lostOnTheWay():
		case in.Op == linearizability.LeaseAcquire:
			in.Lease, out.OK = svc.take(c.session)
			if !out.OK && !trying[c] {
				continue // still waiting
			}
			if !s.crashAt[s.executed+1] {
				c.pending.Input = in // a client that crashes never learns its lease's name
			}
		case in.Op == linearizability.LeaseRelease:
			out.OK = svc.release(c.session, in.Lease)
		}
		if s.complete(c, out) {
			delete(holding, c)
			continue
		}
		switch {
		case in.Op == linearizability.LeaseAcquire && out.OK:
			holding[c] = in.Lease
		case in.Op == linearizability.LeaseRelease:
			delete(holding, c)
		}
	}
	return s.history
}

// semaphoreHolds returns the definite holds of a semaphore history.
func semaphoreHolds(h linearizability.History) []definiteHold {
	return definiteHolds(h, func(op linearizability.Operation) holdEvent {
		in, ok := op.Input.(linearizability.SemaphoreInput)
		if !ok {
			return holdEvent{}
		}
		out, _ := op.Output.(linearizability.SemaphoreOutput)
		return holdEvent{
			acquired: in.Op == linearizability.LeaseAcquire && out.OK,
			release:  in.Op == linearizability.LeaseRelease,
			session:  in.Session,
			key:      in.Lease,
		}
	})
}
