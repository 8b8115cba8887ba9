package fakelog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/zkfake/zktest"
)

// Config configures a recording by [Record].
type Config struct {
	// Connect opens a new session for a client and returns once it is
	// established (StateHasSession). Record calls it for every client
	// before they start, and from a client's goroutine when the client
	// reconnects after a crash.
	Connect func() (zktest.Conn, error)
	// Base is an existing, empty, persistent znode. The clients work on
	// Base/a, Base/b, Base/q and the children of Base/q, all absent at
	// the start.
	Base string
	// Clients is the number of clients, each a goroutine with its own
	// session (default 3).
	Clients int
	// Ops is the number of znode operations each client performs
	// (default 50).
	Ops int
	// Seed seeds every random choice: the operations, the faults, the
	// pauses.
	Seed uint64
	// Faults, if set, injects faults: before each of its steps, a client
	// that is not partitioned injects one with probability FaultRate —
	// a partition (healed after a random time up to MaxPartition), a
	// session expiry, or, if Faults is also a [zktest.Crasher], a crash.
	Faults    zktest.Faults
	FaultRate float64
	// MaxPartition bounds how long a partition lasts (default 8s: longer
	// than the default negotiated session timeouts, so some partitions
	// end in an expiry).
	MaxPartition time.Duration
	// Think bounds the random pause before each step: each client's own
	// pause, or in lockstep the pause between steps (default none; 10ms in
	// lockstep).
	Think time.Duration
	// Lockstep runs one step at a time, in an order drawn from Seed, each
	// at its own instant: the same seed then gives the same history.
	// It must run inside a testing/synctest bubble, on a server whose
	// calls block only on the bubble's channels (the fake).
	Lockstep bool
	// SessionWait bounds how long a client waits for its session to be
	// back after a fault (default 30s).
	SessionWait time.Duration
}

// Recording is what [Record] recorded.
type Recording struct {
	// Recorder holds the history. In fake mode, settle it with the
	// server's log: Recorder.Settle(GroundTruth(srv, History())).
	Recorder *linearizability.Recorder
	// Stats counts what happened.
	Stats Stats
}

// Stats counts the operations and faults of a recording.
type Stats struct {
	Operations int // znode operations recorded
	Unknown    int // of which the client never learned the outcome
	Partitions int
	Expiries   int // sessions expired by Faults.Expire
	Crashes    int
	// LostConnections counts calls that failed because the connection
	// dropped while the client was not partitioned: lost requests and
	// replies.
	LostConnections int
	// SessionChanges counts calls during which the client's session
	// changed (the previous one expired unnoticed). Such a call may have
	// been applied under either session, so its outcome is recorded as
	// unknown; an ephemeral create among them could make a correct
	// history look illegal. Faults injected by Record never cause one.
	SessionChanges int
}

// History returns the recorded history.
func (r *Recording) History() linearizability.History { return r.Recorder.History() }

// Check checks h, this recording's history raw or settled, with
// [linearizability.CheckZnodes]: the znodes the clients use are all absent at
// the start.
func (r *Recording) Check(h linearizability.History, timeout time.Duration) (linearizability.Result, error) {
	return linearizability.CheckZnodes(h, timeout)
}

// Record runs cfg.Clients clients, each in its own session, doing cfg.Ops
// random znode operations each under cfg.Base, records what they did, and
// closes their sessions. Inside a testing/synctest bubble its timestamps
// and pauses are virtual.
//
// A call that fails with an error other than ZooKeeper's answer (the
// connection was lost, no server answered) is recorded with an unknown
// outcome. Session expiries — forced by Faults, after a long partition,
// after a crash — are recorded as observed [linearizability.SessionExpiry]
// operations, bounded by the last instant the session was known alive and
// the instant its client learned of the expiry.
func Record(cfg Config) (*Recording, error) {
	if cfg.Connect == nil {
		return nil, errors.New("fakelog: Config.Connect is nil")
	}
	if cfg.Base == "" || cfg.Base == "/" {
		return nil, fmt.Errorf("fakelog: Config.Base %q is not a znode of the test's own", cfg.Base)
	}
	if cfg.FaultRate < 0 || cfg.FaultRate > 1 || (cfg.FaultRate > 0 && cfg.Faults == nil) {
		return nil, fmt.Errorf("fakelog: Config.FaultRate %v needs Faults and a value in [0, 1]", cfg.FaultRate)
	}
	if cfg.Clients <= 0 {
		cfg.Clients = 3
	}
	if cfg.Ops <= 0 {
		cfg.Ops = 50
	}
	if cfg.MaxPartition <= 0 {
		cfg.MaxPartition = 8 * time.Second
	}
	if cfg.Lockstep && cfg.Think <= 0 {
		cfg.Think = 10 * time.Millisecond
	}
	if cfg.SessionWait <= 0 {
		cfg.SessionWait = 30 * time.Second
	}
	if cfg.Lockstep && !inBubble() {
		return nil, errors.New("fakelog: Config.Lockstep needs a testing/synctest bubble")
	}
	h := &harness{cfg: cfg, rec: linearizability.NewRecorder(nil)}
	defer h.closeAll()
	clients := make([]*client, cfg.Clients)
	for i := range clients {
		c, err := h.newClient(i)
		if err != nil {
			return nil, err
		}
		clients[i] = c
	}
	if cfg.Lockstep {
		h.runLockstep(clients)
	} else {
		h.runFree(clients)
	}
	for _, c := range clients {
		c.finish()
	}
	var errs []error
	for _, c := range clients {
		errs = append(errs, c.err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Recording{Recorder: h.rec, Stats: h.stats}, nil
}

// harness is one recording in progress.
type harness struct {
	cfg Config
	rec *linearizability.Recorder

	mu    sync.Mutex
	conns []zktest.Conn // every connection opened, closed at the end
	stats Stats
}

func (h *harness) count(f func(*Stats)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(&h.stats)
}

// connect opens a session and keeps the connection for closeAll.
func (h *harness) connect() (zktest.Conn, error) {
	conn, err := h.cfg.Connect()
	if err != nil {
		return nil, fmt.Errorf("fakelog: connecting: %w", err)
	}
	h.mu.Lock()
	h.conns = append(h.conns, conn)
	h.mu.Unlock()
	return conn, nil
}

func (h *harness) closeAll() {
	h.mu.Lock()
	conns := h.conns
	h.conns = nil
	h.mu.Unlock()
	for _, conn := range conns {
		conn.Close()
	}
}

// runFree runs every client in its own goroutine at once.
func (h *harness) runFree(clients []*client) {
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			for c.ops > 0 && c.err == nil {
				if h.cfg.Think > 0 {
					time.Sleep(time.Duration(c.rng.Int64N(int64(h.cfg.Think))))
				}
				if err := c.waitSession(); err != nil {
					c.err = err
					return
				}
				c.step()
			}
		})
	}
	wg.Wait()
}

// runLockstep hands out steps one at a time: it picks a client that is
// ready, lets it take one step, waits until every goroutine in the bubble
// is blocked — the client done with its step, or stuck in a call that only
// a timer will end — and lets virtual time pass before the next one. So
// nothing ever runs at once but timers and the calls they end.
func (h *harness) runLockstep(clients []*client) {
	rng := rand.New(rand.NewPCG(h.cfg.Seed, 1<<32))
	var wg sync.WaitGroup
	for _, c := range clients {
		c.turn = make(chan struct{}, 1)
		wg.Go(func() {
			for range c.turn {
				c.step()
				c.busy.Store(false)
			}
		})
	}
	pause := func() {
		time.Sleep(time.Duration(rng.Int64N(int64(h.cfg.Think))) + 1)
		synctest.Wait()
	}
	for {
		var ready []*client
		working := false
		for _, c := range clients {
			if c.busy.Load() {
				working = true
				continue
			}
			if c.ops == 0 || c.err != nil {
				continue
			}
			working = true
			if c.ready() {
				ready = append(ready, c)
			}
		}
		if !working {
			break
		}
		if len(ready) > 0 {
			c := ready[rng.IntN(len(ready))]
			c.busy.Store(true)
			c.turn <- struct{}{}
			synctest.Wait()
		}
		pause()
	}
	for _, c := range clients {
		close(c.turn)
	}
	wg.Wait()
}

// inBubble reports whether the caller runs in a testing/synctest bubble,
// where synctest.Wait returns; outside one it panics.
func inBubble() (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	synctest.Wait()
	return true
}

// client is one sequential worker with its own session.
type client struct {
	id   int
	h    *harness
	rng  *rand.Rand
	work *workload
	conn zktest.Conn
	ops  int // operations left
	seq  int // numbers the client's operations, for tags and data
	err  error

	// session is the session the client last knew; aliveAt is an instant
	// at which it was certainly alive — the call of the last write the
	// ensemble answered under it (writes of an expired session are
	// refused), or the start of the connect that opened it — and so a
	// lower bound for its expiry.
	session int64
	aliveAt time.Time

	partitioned  bool
	healAt       time.Time
	endPartition func()

	// awaiting: after a heal or an expiry, the client waits for a session
	// (other than awaitNot) before it carries on.
	awaiting   bool
	awaitNot   int64
	awaitSince time.Time

	busy atomic.Bool   // lockstep: taking a step
	turn chan struct{} // lockstep: the go-ahead for one step
}

func (h *harness) newClient(id int) (*client, error) {
	rng := rand.New(rand.NewPCG(h.cfg.Seed, uint64(id)))
	c := &client{id: id, h: h, rng: rng, work: newWorkload(h.cfg.Base, rng), ops: h.cfg.Ops}
	return c, c.reconnect()
}

// reconnect gives the client a new connection.
func (c *client) reconnect() error {
	before := time.Now()
	conn, err := c.h.connect()
	if err != nil {
		return err
	}
	c.conn, c.session, c.aliveAt = conn, conn.SessionID(), before
	return nil
}

// ready reports whether the client can take a step: it is not waiting for
// its session, or the session is back. A client that waited too long
// stops with an error.
func (c *client) ready() bool {
	if !c.awaiting {
		return true
	}
	if c.sessionBack() {
		return true
	}
	if time.Since(c.awaitSince) > c.h.cfg.SessionWait {
		c.err = fmt.Errorf("fakelog: client %d: no session %v after a fault (state %v)", c.id, c.h.cfg.SessionWait, c.conn.State())
	}
	return false
}

func (c *client) sessionBack() bool {
	id := c.conn.SessionID()
	return c.conn.State() == zk.StateHasSession && id != 0 && id != c.awaitNot
}

// waitSession waits, polling, until the client's session is back.
func (c *client) waitSession() error {
	for !c.ready() {
		if c.err != nil {
			return c.err
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// await makes the client wait for a session other than not (0: any).
func (c *client) await(not int64) {
	c.awaiting, c.awaitNot, c.awaitSince = true, not, time.Now()
}

// noticeSession records the expiry of the client's last known session if
// the connection now has another one.
func (c *client) noticeSession() {
	id := c.conn.SessionID()
	if id == 0 || id == c.session {
		return
	}
	c.h.rec.Observe(linearizability.SessionExpiry{Session: c.session}, nil, c.aliveAt, time.Now())
	// The new session was created after the old one was last alive, so
	// aliveAt stays a lower bound.
	c.session = id
}

// step takes one step: a heal that is due, a fault, or an operation.
func (c *client) step() {
	c.awaiting = false
	c.noticeSession()
	faults := c.h.cfg.Faults
	switch {
	case c.partitioned && !time.Now().Before(c.healAt):
		c.heal()
	case faults != nil && !c.partitioned && c.rng.Float64() < c.h.cfg.FaultRate:
		c.inject(faults)
	case !c.partitioned && c.conn.State() != zk.StateHasSession:
		// The connection dropped on its own: wait for it rather than
		// queue a call that a new session might serve.
		c.await(0)
	default:
		c.operate()
		c.ops--
	}
}

func (c *client) fail(err error) {
	if err != nil && c.err == nil {
		c.err = fmt.Errorf("fakelog: client %d: %w", c.id, err)
		c.ops = 0
	}
}

func (c *client) heal() {
	c.fail(c.h.cfg.Faults.Heal(c.conn))
	c.endPartition()
	c.partitioned = false
	c.await(0)
}

// inject injects a random fault.
func (c *client) inject(faults zktest.Faults) {
	crasher, canCrash := faults.(zktest.Crasher)
	r := c.rng.IntN(10)
	switch {
	case r < 5 || (r >= 8 && !canCrash):
		c.endPartition = c.h.rec.Fault(c.id, linearizability.FaultPartition, fmt.Sprintf("session %#x cut off", c.session))
		c.fail(faults.Partition(c.conn))
		c.partitioned = true
		c.healAt = time.Now().Add(time.Duration(c.rng.Int64N(int64(c.h.cfg.MaxPartition))))
		c.h.count(func(s *Stats) { s.Partitions++ })
	case r < 8:
		c.h.rec.Fault(c.id, linearizability.FaultExpiry, fmt.Sprintf("session %#x expired", c.session))
		c.fail(faults.Expire(c.conn))
		c.await(c.session)
		c.h.count(func(s *Stats) { s.Expiries++ })
	default:
		c.h.rec.Fault(c.id, linearizability.FaultCrash, fmt.Sprintf("session %#x crashed", c.session))
		c.fail(crasher.Crash(c.conn))
		// The server expires the session after its timeout; when, the
		// client never learns.
		c.h.rec.Observe(linearizability.SessionExpiry{Session: c.session}, nil, c.aliveAt, time.Time{})
		c.fail(c.reconnect())
		c.h.count(func(s *Stats) { s.Crashes++ })
	}
}

// operate performs and records one random operation.
func (c *client) operate() {
	in := c.work.next()
	in.Session = c.session
	c.seq++
	tag := fmt.Sprintf("c%d-%d", c.id, c.seq)
	if in.Op == linearizability.Create || in.Op == linearizability.Set {
		in.Data = tag // unique, so that a read shows which write it saw
	}
	called := time.Now()
	op := c.h.rec.CallTagged(c.id, tag, in)
	out := perform(c.conn, in)
	switch {
	case c.conn.SessionID() != in.Session:
		op.Unknown()
		c.h.count(func(s *Stats) { s.Operations++; s.Unknown++; s.SessionChanges++ })
	case !isAnswer(in.Op, out.Err):
		op.Unknown()
		lost := errors.Is(out.Err, zk.ErrConnectionClosed) && !c.partitioned
		if lost {
			c.h.rec.Fault(c.id, linearizability.FaultLostReply, fmt.Sprintf("%v: %v", in, out.Err))
		}
		c.h.count(func(s *Stats) {
			s.Operations++
			s.Unknown++
			if lost {
				s.LostConnections++
			}
		})
	default:
		op.Return(out)
		if in.Op == linearizability.Create || in.Op == linearizability.Set || in.Op == linearizability.Delete {
			c.aliveAt = called
		}
		c.work.learn(in, out)
		c.h.count(func(s *Stats) { s.Operations++ })
	}
}

// finish heals a client left partitioned, so that closing its session
// reaches the server. While it was cut off, with no more operations to
// notice anything, the server may have expired its session, which the
// others may have seen: that expiry is recorded as possible — at some
// instant after the session was last known alive, or never.
func (c *client) finish() {
	if c.partitioned {
		c.h.rec.Observe(linearizability.SessionExpiry{Session: c.session}, nil, c.aliveAt, time.Time{})
		c.fail(c.h.cfg.Faults.Heal(c.conn))
		c.endPartition()
		c.partitioned = false
	}
}
