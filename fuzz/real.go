package fuzz

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/zkfake/zktest"
	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

// The real-ensemble mode. With OnEnsemble naming an ensemble (loopback
// addresses only; the OnEnsemble option sets it), Check and Run run a
// lock's cases against it instead of the fake: real goroutine scheduling,
// real time, faults through the
// loopback proxy of package ensemble (partitions, expiries, crashes). Nothing
// is deterministic there, so rapid cannot shrink: each case draws its
// schedule from the campaign's seed, and the first finding is reported as it
// happened, with its story and porcupine's report. The history is what the
// clients saw, with session expiries bounded by what they saw of them (cut
// off at one instant, told of the expiry at a later one); porcupine checks
// it with the same model as in fake mode.
//
// Detectors: mutual exclusion and unfenced writes (porcupine), liveness (no
// client finishes its round once every fault is healed), leaks of nodes
// (the lock's directory is not empty once every session has ended). The
// herd and watch-leak detectors need the fake's event log and watch counts,
// which a real server does not offer; they are left out.

// RealCases is how many cases Check runs against a real ensemble: each
// takes seconds of real time.
const RealCases = 3

const (
	realFaultTime   = 3 * time.Second // how long faults are injected in a case
	realSessionTime = 1500 * time.Millisecond
	realFinishTime  = 45 * time.Second // how long clients get to finish their rounds
)

// realCampaign runs cases against the ensemble at e.cfg.Servers and fails
// t at the first finding.
func (e *engine) realCampaign(t *testing.T, cases int, seed uint64) {
	t.Helper()
	servers, err := ensemble.ParseServers(strings.Join(e.cfg.Servers, ","))
	if err != nil {
		t.Fatalf("zkfuzz: the ensemble to run against: %v", err)
	}
	if seed == 0 {
		seed = rand.Uint64() | 1
	}
	t.Logf("zkfuzz: %d cases against the ensemble at %s, seed %d", cases, strings.Join(servers, ","), seed)
	target := ensemble.NewTarget(servers)
	for i := 0; i < cases; i++ {
		if e.ctx != nil && e.ctx.Err() != nil {
			return
		}
		var f *Finding
		var c *realCase
		target.Run(t, fmt.Sprintf("case-%d", i+1), func(t *testing.T, env zktest.Env) {
			c = newRealCase(t, env, e, rand.New(rand.NewPCG(seed, uint64(i))))
			f = c.run()
		})
		e.runs.Add(1)
		e.steps.Add(int64(c.steps))
		res := c.finish()
		if f != nil {
			f.Story = res.story()
		}
		if f = e.cfg.reported(f); f == nil {
			f = e.cfg.reported(res.checkHistory())
		}
		if f == nil {
			continue
		}
		e.failures.Add(1)
		e.firstFail.CompareAndSwap(0, int64(i+1))
		if p, err := res.writeHTML(e.cfg.HTMLDir); err == nil {
			f.HTML = p
		}
		e.mu.Lock()
		e.last = f
		e.mu.Unlock()
		if e.survey {
			return
		}
		t.Fatalf("%s (case %d of the ensemble campaign, seed %d)\n\n%s", f.Detector, i+1, seed, f)
	}
}

// realCase is one case against the ensemble.
type realCase struct {
	t       *testing.T
	env     zktest.Env
	e       *engine
	rng     *rand.Rand
	lock    string
	fencing bool
	start   time.Time

	// rec records the history porcupine checks.
	rec *linearizability.Recorder

	mu       sync.Mutex
	lines    []string
	spawned  int   // processes started so far, which numbers their rows
	resource int64 // the newest token the fenced resource accepted
	steps    int
	clients  []*realClient
}

// realClient is one client process of a real case.
type realClient struct {
	c        *realCase
	id       int
	name     string
	restarts int // how many processes of the client came before this one
	conn     zktest.Conn
	locker   Locker
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	row      int           // the process's client number in the history's recorder
	stop     chan struct{} // closed when the client is to finish its round and stop
	stopped  sync.Once

	// Guarded by c.mu.
	session        int64                   // the session the client last had
	disconnectedAt time.Time               // when it last lost its connection, zero if connected
	cut            linearizability.Instant // when the harness cut it off
	endCut         func()                  // ends the partition in the history's faults; nil if not cut off
	abandoned      bool                    // crashed: the harness no longer heeds it
	finished       time.Time               // when its loop ended
}

func newRealCase(t *testing.T, env zktest.Env, e *engine, rng *rand.Rand) *realCase {
	c := &realCase{t: t, env: env, e: e, rng: rng, lock: env.Base() + "/lock", start: time.Now(), rec: linearizability.NewRecorder(nil)}
	switch e.cfg.Fencing {
	case FencingAlways:
		c.fencing = true
	case FencingDrawn:
		c.fencing = rng.IntN(2) == 0
	}
	return c
}

// note adds a line to the story. Called with c.mu held.
func (c *realCase) note(format string, args ...any) {
	c.lines = append(c.lines, fmt.Sprintf("[%s] ", at(time.Since(c.start)))+fmt.Sprintf(format, args...))
}

func (c *realCase) notef(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.note(format, args...)
}

// run runs the case: clients loop while faults are injected, then every
// fault heals and the clients finish. It returns a liveness or leak
// finding; the history is checked afterwards.
func (c *realCase) run() *Finding {
	n := minClients + c.rng.IntN(c.e.cfg.Clients-minClients+1)
	c.notef("%d clients start, each with a session of its own, and loop: Lock, critical section%s, Unlock", n, map[bool]string{true: " (writing to a fenced resource)", false: ""}[c.fencing])
	for i := 0; i < n; i++ {
		c.spawn(i)
	}
	partitioner, _ := c.env.(zktest.Partitioner)
	expirer, _ := c.env.(zktest.Expirer)
	deadline := time.Now().Add(realFaultTime)
	for time.Now().Before(deadline) {
		time.Sleep(time.Duration(100+c.rng.IntN(400)) * time.Millisecond)
		c.steps++
		k := c.rng.IntN(len(c.clients))
		cl := c.clients[k]
		switch roll := c.rng.IntN(10); {
		case roll < 4 && partitioner != nil:
			if c.partitioned(cl) {
				c.notef("%s's partition heals", cl.name)
				zktest.Require(c.t, partitioner.Heal(cl.conn))
				c.setPartitioned(cl, false)
			} else {
				c.notef("%s is cut off from the ensemble", cl.name)
				c.setPartitioned(cl, true)
				zktest.Require(c.t, partitioner.Partition(cl.conn))
			}
		case roll < 6 && expirer != nil:
			c.notef("the ensemble is made to expire %s's session %#x", cl.name, cl.conn.SessionID())
			c.setPartitioned(cl, false)
			zktest.Require(c.t, expirer.Expire(cl.conn))
			c.notef("%s's session has expired", cl.name)
		case roll < 7 && partitioner != nil:
			c.notef("%s's process crashes (cut off for good) and restarts as %s", cl.name, restartedName(k, cl.restarts+1))
			c.crash(cl, partitioner)
			c.spawn(k)
		default:
			// Let the clients run.
		}
	}
	c.notef("every fault heals; each client finishes its round and stops")
	for _, cl := range c.clients {
		if c.partitioned(cl) && partitioner != nil {
			zktest.Require(c.t, partitioner.Heal(cl.conn))
			c.setPartitioned(cl, false)
		}
		cl.stopped.Do(func() { close(cl.stop) })
	}
	finish := time.After(realFinishTime)
	for _, cl := range c.clients {
		select {
		case <-cl.done:
		case <-finish:
			return c.stuck()
		}
	}
	for _, cl := range c.clients {
		cl.conn.Close()
	}
	c.notef("every client has stopped and closed its session; the sessions of crashed processes expire")
	time.Sleep(2*realSessionTime + time.Second)
	return c.leaked()
}

// spawn starts client slot k, or a new process in its place.
func (c *realCase) spawn(k int) {
	conn, events := c.env.Connect(c.t, realSessionTime)
	ctx, cancel := context.WithCancel(context.Background())
	c.mu.Lock()
	cl := &realClient{c: c, id: k, conn: conn, ctx: ctx, cancel: cancel, done: make(chan struct{}), stop: make(chan struct{}), row: c.spawned, session: conn.SessionID()}
	c.spawned++
	cl.name = fmt.Sprintf("client %d", k)
	if k < len(c.clients) {
		cl.restarts = c.clients[k].restarts + 1
		cl.name = restartedName(k, cl.restarts)
		c.clients[k] = cl
	} else {
		c.clients = append(c.clients, cl)
	}
	c.mu.Unlock()
	cl.locker = c.e.sub.newLocker(conn, c.lock)
	go cl.watch(events)
	go cl.loop()
}

func (c *realCase) partitioned(cl *realClient) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return cl.endCut != nil
}

func (c *realCase) setPartitioned(cl *realClient, cut bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cut {
		cl.cut = c.rec.Now()
		cl.endCut = c.rec.Fault(cl.row, linearizability.FaultPartition, "partitioned")
		return
	}
	if cl.endCut != nil {
		cl.endCut()
		cl.endCut = nil
	}
}

// crash cuts a client off for good and abandons it: its session expires
// at some instant after the cut that no one sees.
func (c *realCase) crash(cl *realClient, p zktest.Partitioner) {
	if !c.partitioned(cl) {
		c.setPartitioned(cl, true)
		zktest.Require(c.t, p.Partition(cl.conn))
	}
	c.mu.Lock()
	cl.abandoned = true
	c.rec.FaultAt(cl.row, linearizability.FaultCrash, "process crashed", cl.cut, cl.cut)
	c.rec.Observe(linearizability.SessionExpiry{Session: cl.session}, struct{}{}, cl.cut.Time(), time.Time{})
	c.mu.Unlock()
	cl.cancel()
	cl.stopped.Do(func() { close(cl.stop) })
}

// watch follows the client's session events: when it learns that its
// session expired, the expiry happened between the moment it was cut off
// and now.
func (cl *realClient) watch(events <-chan zk.Event) {
	c := cl.c
	for ev := range events {
		if ev.Type != zk.EventSession {
			continue
		}
		c.mu.Lock()
		switch ev.State {
		case zk.StateDisconnected:
			if cl.disconnectedAt.IsZero() {
				cl.disconnectedAt = time.Now()
			}
		case zk.StateHasSession:
			cl.disconnectedAt = time.Time{}
			cl.session = cl.conn.SessionID()
		case zk.StateExpired:
			if !cl.abandoned {
				now := time.Now()
				from := cl.disconnectedAt
				if from.IsZero() {
					from = now
				}
				c.rec.Observe(linearizability.SessionExpiry{Session: cl.session}, struct{}{}, from, now)
				c.note("%s learns that its session %#x has expired", cl.name, cl.session)
			}
		}
		c.mu.Unlock()
	}
}

// loop is the client loop: Lock, critical section, Unlock, until told to
// stop after a round.
func (cl *realClient) loop() {
	defer close(cl.done)
	c := cl.c
	pause := func(max int) {
		time.Sleep(time.Duration(c.rng2(max)) * time.Millisecond)
	}
	for {
		select {
		case <-cl.stop:
			c.mu.Lock()
			cl.finished = time.Now()
			c.mu.Unlock()
			return
		default:
		}
		call := c.rec.Now()
		err := cl.locker.Lock(cl.ctx)
		c.mu.Lock()
		if cl.abandoned {
			c.mu.Unlock()
			return
		}
		ret, session := c.rec.Now(), cl.conn.SessionID()
		in := linearizability.MutexInput{Op: linearizability.Acquire, Lock: c.lock, Session: session}
		if err != nil {
			c.rec.Add(cl.row, in, linearizability.MutexOutput{}, call, ret)
			c.note("%s's Lock fails: %v", cl.name, err)
			c.mu.Unlock()
			pause(100)
			continue
		}
		var token int64
		if f, ok := cl.locker.(Fencer); ok {
			token = f.Token()
		}
		c.rec.Add(cl.row, in, linearizability.MutexOutput{OK: true, Token: token}, call, ret)
		c.note("%s holds the lock (session %#x%s)", cl.name, session, describeToken(token))
		c.mu.Unlock()
		pause(50)
		if c.fencing {
			cl.write(session)
			pause(50)
		}
		c.mu.Lock()
		ucall := c.rec.Now()
		c.note("%s calls Unlock", cl.name)
		c.mu.Unlock()
		var uerr error
		for attempt := 1; attempt <= unlockAttempts; attempt++ {
			if uerr = cl.locker.Unlock(); uerr == nil || releaseSettled(uerr) || cl.ctx.Err() != nil {
				break
			}
		}
		c.mu.Lock()
		if !cl.abandoned {
			uin := linearizability.MutexInput{Op: linearizability.Release, Lock: c.lock, Session: session}
			if uerr == nil {
				c.rec.Add(cl.row, uin, linearizability.MutexOutput{OK: true}, ucall, c.rec.Now())
				c.note("%s's Unlock returns", cl.name)
			} else {
				c.rec.AddUnknown(cl.row, uin, ucall)
				c.note("%s's Unlock fails: %v", cl.name, uerr)
			}
		}
		c.mu.Unlock()
		pause(30)
	}
}

// rng2 draws a pause for a client goroutine; the case's own generator
// belongs to the harness goroutine, and nothing in real time repeats.
func (c *realCase) rng2(max int) int {
	return rand.IntN(max + 1)
}

// write is a holder's write to the protected resource, as in fake mode.
func (cl *realClient) write(session int64) {
	c := cl.c
	c.mu.Lock()
	defer c.mu.Unlock()
	f, fenced := cl.locker.(Fencer)
	var token int64
	if fenced {
		token = f.Token()
		if token == 0 {
			c.note("%s has no fencing token any more and skips its write", cl.name)
			return
		}
	}
	accepted := !fenced || token >= c.resource
	if accepted && fenced {
		c.resource = token
	}
	at := c.rec.Now()
	c.rec.Add(cl.row, linearizability.MutexInput{Op: linearizability.Write, Lock: c.lock, Session: session, Token: token}, linearizability.MutexOutput{OK: accepted}, at, at)
	c.note("%s writes to the protected resource%s: accepted %v", cl.name, describeToken(token), accepted)
}

// stuck reports clients that did not finish their round in time.
func (c *realCase) stuck() *Finding {
	c.mu.Lock()
	defer c.mu.Unlock()
	var waiting []string
	for _, cl := range c.clients {
		select {
		case <-cl.done:
		default:
			waiting = append(waiting, cl.name)
		}
	}
	children, _, err := c.clients[0].conn.Children(c.lock)
	sort.Strings(children)
	desc := fmt.Sprintf("%s holds %s", c.lock, describeChildren(children))
	if err != nil {
		desc = fmt.Sprintf("listing %s failed: %v", c.lock, err)
	}
	summary := fmt.Sprintf("with every fault healed, %s did not finish a round in %v; %s", strings.Join(waiting, ", "), realFinishTime, desc)
	c.note("✗ liveness: %s", summary)
	for _, cl := range c.clients {
		cl.cancel()
	}
	return &Finding{Detector: Liveness, Summary: StableName(summary)}
}

// leaked reports nodes left under the lock's directory once every session
// has ended.
func (c *realCase) leaked() *Finding {
	conn, _ := c.env.Connect(c.t, realSessionTime)
	children, _, err := conn.Children(c.lock)
	if errors.Is(err, zk.ErrNoNode) || err == nil && len(children) == 0 {
		return nil
	}
	summary := fmt.Sprintf("once every session had ended, %s still holds %s", c.lock, describeChildren(children))
	if err != nil {
		summary = fmt.Sprintf("listing %s at the end failed: %v", c.lock, err)
	}
	c.notef("✗ leak: %s", summary)
	return &Finding{Detector: Leak, Summary: StableName(summary)}
}

// finish gathers the case's history and story for the checks.
func (c *realCase) finish() *caseResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.rec.History()
	return &caseResult{ops: h.Operations, faults: h.Faults, rendered: c.story(), steps: c.steps}
}

func (c *realCase) story() string {
	var b strings.Builder
	for i, l := range c.lines {
		fmt.Fprintf(&b, "%3d. %s\n", i+1, StableName(l))
	}
	return b.String()
}
