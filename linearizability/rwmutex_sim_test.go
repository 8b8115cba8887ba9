package linearizability_test

import "github.com/zksim/zksim/linearizability"

// rwService is a read/write lock service: any number of sessions read, or
// one writes, with fencing tokens for writers. It needs no locking: only
// the simulator uses it.
type rwService struct {
	writer  int64 // 0: none
	readers map[int64]int
	token   int64 // last token handed out
	expired map[int64]bool
	// lax lets a writer in while sessions read: a broken lock.
	lax bool
}

func newRWService(lax bool) *rwService {
	return &rwService{readers: map[int64]int{}, expired: map[int64]bool{}, lax: lax}
}

func (l *rwService) read(session int64) bool {
	if l.writer != 0 || l.expired[session] {
		return false
	}
	l.readers[session]++
	return true
}

func (l *rwService) write(session int64) (int64, bool) {
	if l.writer != 0 || len(l.readers) > 0 && !l.lax || l.expired[session] {
		return 0, false
	}
	l.token++
	l.writer = session
	return l.token, true
}

func (l *rwService) readRelease(session int64) bool {
	if l.readers[session] == 0 {
		return false
	}
	if l.readers[session]--; l.readers[session] == 0 {
		delete(l.readers, session)
	}
	return true
}

func (l *rwService) writeRelease(session int64) bool {
	if l.writer != session {
		return false
	}
	l.writer = 0
	return true
}

func (l *rwService) expire(session int64) {
	l.expired[session] = true
	delete(l.readers, session)
	if l.writer == session {
		l.writer = 0
	}
}

// simulateRWMutex simulates clients reading and writing under a read/write
// lock, writers writing the fenced resource it protects, until the history
// holds ops operations of which unknown have an unknown outcome. Some
// acquisitions are tries, which answer OK false when the lock is taken;
// the rest wait. With lax, the service lets a writer in beside readers.
func simulateRWMutex(seed uint64, ops, unknown int, lax bool) linearizability.History {
	s := newSimulation(seed, 5, ops, unknown)
	svc := newRWService(lax)
	res := &resource{fenced: true}
	reading := map[*simClient]bool{}
	trying := map[*simClient]bool{}
	for len(s.history.Operations) < ops {
		s.now++
		s.expireDue(svc.expire)
		c := s.clients[s.rng.IntN(len(s.clients))]
		if s.now < c.busyUntil {
			continue
		}
		if c.pending == nil {
			in := linearizability.RWMutexInput{Lock: "/rw", Session: c.session}
			switch {
			case c.holding && !c.wrote:
				in.Op, in.Token = linearizability.RWWrite, c.token
			case c.holding:
				in.Op = linearizability.WriteRelease
			case reading[c]:
				in.Op = linearizability.ReadRelease
			case s.rng.IntN(3) == 0:
				in.Op = linearizability.WriteAcquire
			default:
				in.Op = linearizability.ReadAcquire
			}
			trying[c] = s.rng.IntN(4) == 0
			s.call(c, in)
			continue
		}
		in := c.pending.Input.(linearizability.RWMutexInput)
		var out linearizability.RWMutexOutput
		switch {
		case s.lostOnTheWay():
		case in.Op == linearizability.ReadAcquire:
			if out.OK = svc.read(c.session); !out.OK && !trying[c] {
				continue // still waiting
			}
		case in.Op == linearizability.WriteAcquire:
			if out.Token, out.OK = svc.write(c.session); !out.OK && !trying[c] {
				continue
			}
		case in.Op == linearizability.RWWrite:
			out.OK = res.write(in.Token)
		case in.Op == linearizability.ReadRelease:
			out.OK = svc.readRelease(c.session)
		case in.Op == linearizability.WriteRelease:
			out.OK = svc.writeRelease(c.session)
		}
		if s.complete(c, out) {
			reading[c] = false
			continue
		}
		switch in.Op {
		case linearizability.ReadAcquire:
			reading[c] = out.OK
		case linearizability.WriteAcquire:
			c.holding, c.token, c.wrote = out.OK, out.Token, false
		case linearizability.RWWrite:
			c.wrote = true
		case linearizability.ReadRelease:
			reading[c] = false
		case linearizability.WriteRelease:
			c.holding = false
		}
	}
	return s.history
}

// rwHolds returns the definite holds of a read/write lock history.
func rwHolds(h linearizability.History) []definiteHold {
	return definiteHolds(h, func(op linearizability.Operation) holdEvent {
		in, ok := op.Input.(linearizability.RWMutexInput)
		if !ok {
			return holdEvent{}
		}
		out, _ := op.Output.(linearizability.RWMutexOutput)
		e := holdEvent{session: in.Session, key: "read"}
		switch in.Op {
		case linearizability.ReadAcquire:
			e.acquired = out.OK
		case linearizability.ReadRelease:
			e.release = true
		case linearizability.WriteAcquire:
			e.acquired, e.key, e.write = out.OK, "write", true
		case linearizability.WriteRelease:
			e.release, e.key = true, "write"
		}
		return e
	})
}
