package linearizability_test

import (
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/zksim/zksim/linearizability"
)

// The simulators below build long histories quickly and deterministically,
// without goroutines: clients take turns on a timeline of ticks; each
// operation is called at one tick, takes effect at a later one, and returns
// later still, so operations of different clients overlap. Every unknownth
// operation the client crashes instead of learning the outcome, which may
// or may not have taken effect; the server expires the crashed session a
// while later and the client carries on with a new session.

// simClient is one client of a simulation.
type simClient struct {
	clientID  int
	session   int64
	busyUntil int64
	pending   *linearizability.Operation
	// lock clients: the token of the hold, 0 when not holding
	holding bool
	token   int64
	wrote   bool
}

// simulation holds what both simulators share.
type simulation struct {
	rng      *rand.Rand
	now      int64
	clients  []*simClient
	nextID   int
	session  int64
	history  linearizability.History
	expiries map[int64]int64 // session → tick it expires at
	crashAt  map[int]bool    // operation numbers whose outcome is lost
	executed int
}

func newSimulation(seed uint64, clients, ops, unknown int) *simulation {
	s := &simulation{rng: rand.New(rand.NewPCG(seed, 99)), expiries: map[int64]int64{}, crashAt: map[int]bool{}}
	for range clients {
		s.clients = append(s.clients, &simClient{clientID: s.newID(), session: s.newSession()})
	}
	// Each crash adds a session expiry to the history, so crashes are
	// spread over the operations the clients will have completed.
	for i := 1; i <= unknown; i++ {
		s.crashAt[i*(ops-unknown)/(unknown+1)] = true
	}
	return s
}

func (s *simulation) newID() int {
	s.nextID++
	return s.nextID - 1
}

func (s *simulation) newSession() int64 {
	s.session++
	return s.session
}

// call starts an operation for c.
func (s *simulation) call(c *simClient, in any) {
	c.pending = &linearizability.Operation{ClientID: c.clientID, Input: in, Call: s.now}
}

// lostOnTheWay reports whether the next operation to complete is lost
// before it reaches the server: it will crash, and take no effect.
func (s *simulation) lostOnTheWay() bool {
	return s.crashAt[s.executed+1] && s.rng.IntN(2) == 0
}

// complete ends c's pending operation, which took effect now: it either
// returns out a little later, or is lost in a crash. It reports whether
// the client crashed.
func (s *simulation) complete(c *simClient, out any) bool {
	op := *c.pending
	c.pending = nil
	s.executed++
	if s.crashAt[s.executed] {
		op.Return = linearizability.Never
		s.history.Operations = append(s.history.Operations, op)
		s.expiries[c.session] = s.now + 20 + int64(s.rng.IntN(20))
		c.clientID, c.session = s.newID(), s.newSession()
		c.holding, c.token, c.wrote = false, 0, false
		c.busyUntil = s.now + 1
		return true
	}
	op.Output = out
	op.Return = s.now + int64(s.rng.IntN(3))
	c.busyUntil = op.Return + 1
	s.history.Operations = append(s.history.Operations, op)
	return false
}

// expireDue expires the sessions whose time has come, through expire, and
// records the expiries at the instant they happen, as a fake server's log
// gives them.
func (s *simulation) expireDue(expire func(int64)) {
	for _, session := range slices.Sorted(maps.Keys(s.expiries)) {
		if s.expiries[session] <= s.now {
			delete(s.expiries, session)
			expire(session)
			s.history.Operations = append(s.history.Operations, linearizability.Operation{
				ClientID: s.newID(), Input: linearizability.SessionExpiry{Session: session}, Call: s.now, Return: s.now,
			})
		}
	}
}

// simulateMutex simulates clients taking a lock, writing the fenced
// resource it protects, and releasing it, until the history holds ops
// operations of which unknown have an unknown outcome.
func simulateMutex(seed uint64, ops, unknown int) linearizability.History {
	s := newSimulation(seed, 5, ops, unknown)
	svc := newLockService()
	res := &resource{fenced: true}
	const lock = "/lock"
	for len(s.history.Operations) < ops {
		s.now++
		s.expireDue(svc.expire)
		c := s.clients[s.rng.IntN(len(s.clients))]
		if s.now < c.busyUntil {
			continue
		}
		if c.pending == nil {
			in := linearizability.MutexInput{Lock: lock, Session: c.session}
			switch {
			case c.holding && !c.wrote:
				in.Op, in.Token = linearizability.Write, c.token
			case c.holding:
				in.Op = linearizability.Release
			case s.rng.IntN(4) == 0:
				in.Op = linearizability.TryLock
			default:
				in.Op = linearizability.Acquire
			}
			s.call(c, in)
			continue
		}
		in := c.pending.Input.(linearizability.MutexInput)
		var out linearizability.MutexOutput
		switch {
		case s.lostOnTheWay():
		case in.Op == linearizability.Acquire, in.Op == linearizability.TryLock:
			out.Token, out.OK = svc.take(c.session)
			if !out.OK && in.Op == linearizability.Acquire {
				continue // still waiting
			}
		case in.Op == linearizability.Write:
			out.OK = res.write(in.Token)
		case in.Op == linearizability.Release:
			out.OK = svc.release(c.session)
		}
		if s.complete(c, out) {
			continue
		}
		switch in.Op {
		case linearizability.Acquire, linearizability.TryLock:
			c.holding, c.token, c.wrote = out.OK, out.Token, false
		case linearizability.Write:
			c.wrote = true
		case linearizability.Release:
			c.holding = false
		}
	}
	return s.history
}

// simulateZnodes simulates clients doing random operations on the stand-in,
// whose reads are stale at random, until the history holds ops operations
// of which unknown have an unknown outcome.
func simulateZnodes(seed uint64, ops, unknown int) (linearizability.History, []linearizability.Znode) {
	s := newSimulation(seed, 4, ops, unknown)
	initial := standInInitial()
	zk := newZKStandIn(rand.New(rand.NewPCG(seed, 3)), initial)
	for len(s.history.Operations) < ops {
		s.now++
		s.expireDue(zk.expire)
		c := s.clients[s.rng.IntN(len(s.clients))]
		if s.now < c.busyUntil {
			continue
		}
		if c.pending == nil {
			s.call(c, randomZnodeInput(s.rng, c.session))
			continue
		}
		in := c.pending.Input.(linearizability.ZnodeInput)
		if next := s.executed + 1; s.crashAt[next] && (in.Op == linearizability.Get || in.Op == linearizability.Exists || in.Op == linearizability.Children || in.Op == linearizability.Sync) {
			// A read whose outcome is lost constrains nothing and the
			// checker drops it: crash on the next write instead.
			delete(s.crashAt, next)
			s.crashAt[next+1] = true
		}
		if s.lostOnTheWay() {
			s.complete(c, nil)
			continue
		}
		s.complete(c, zk.do(in))
	}
	return s.history, initialZnodes(initial, testDirs...)
}

// simulateElection simulates clients campaigning, writing the fenced
// resource while they lead and resigning, or asking who leads with reads
// that lag at random but never go back, until the history holds ops
// operations of which unknown have an unknown outcome.
func simulateElection(seed uint64, ops, unknown int) linearizability.History {
	s := newSimulation(seed, 5, ops, unknown)
	svc := newLockService()
	res := &resource{fenced: true}
	const election = "/election"
	// leaders is what a read may see: the leader's token after each
	// change, 0 for none, oldest first.
	leaders := []int64{0}
	seen := map[int64]int{} // session → index in leaders of the newest its reads saw
	for len(s.history.Operations) < ops {
		s.now++
		s.expireDue(func(session int64) {
			if svc.holder == session {
				leaders = append(leaders, 0)
			}
			svc.expire(session)
		})
		c := s.clients[s.rng.IntN(len(s.clients))]
		if s.now < c.busyUntil {
			continue
		}
		if c.pending == nil {
			in := linearizability.ElectionInput{Election: election, Session: c.session}
			switch {
			case c.holding && !c.wrote:
				in.Op, in.Token = linearizability.LeaderWrite, c.token
			case c.holding:
				in.Op = linearizability.Resign
			case s.rng.IntN(3) == 0:
				in.Op = linearizability.Observe
			default:
				in.Op = linearizability.Campaign
			}
			s.call(c, in)
			continue
		}
		in := c.pending.Input.(linearizability.ElectionInput)
		if next := s.executed + 1; s.crashAt[next] && in.Op == linearizability.Observe {
			// A read whose outcome is lost constrains nothing and the
			// checker drops it: crash on the next operation instead.
			delete(s.crashAt, next)
			s.crashAt[next+1] = true
		}
		var out linearizability.ElectionOutput
		switch {
		case s.lostOnTheWay():
		case in.Op == linearizability.Campaign:
			out.Token, out.OK = svc.take(c.session)
			if !out.OK {
				continue // still waiting
			}
			leaders = append(leaders, out.Token)
		case in.Op == linearizability.LeaderWrite:
			out.OK = res.write(in.Token)
		case in.Op == linearizability.Resign:
			if out.OK = svc.release(c.session); out.OK {
				leaders = append(leaders, 0)
			}
		case in.Op == linearizability.Observe:
			i := seen[c.session] + s.rng.IntN(len(leaders)-seen[c.session])
			seen[c.session] = i
			out.Token = leaders[i]
		}
		if s.complete(c, out) {
			continue
		}
		switch in.Op {
		case linearizability.Campaign:
			c.holding, c.token, c.wrote = true, out.Token, false
		case linearizability.LeaderWrite:
			c.wrote = true
		case linearizability.Resign:
			c.holding = false
		}
	}
	return s.history
}
