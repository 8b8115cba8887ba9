package fuzz

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/zktest"
)

// Target is what a campaign fuzzes: a coordination recipe described by its
// operations (a Recipe), or a lock (Lock, the Locker loop the package began
// with). Check, Run and Fuzz take one.
type Target interface {
	subject() *subject
}

// Recipe describes a coordination recipe of your own to the harness: the
// handle each simulated client makes, the operations a client calls in its
// loop, the porcupine model the recorded history must satisfy, and the
// checks of what the handle believes. C is the handle's type.
//
// A client's loop: at each move the harness lets it make, the client asks
// every Op whether it is Enabled, the harness picks one of those (the
// schedule's draw picks which, and whether the call gets a short or long
// deadline), and the client calls it. The Op records what it did with
// Call.Record, for the Model. When the case winds down, every client calls
// Stop once, if there is one, and ends. Everything else is the harness's,
// as for a lock: the gate, the drawn faults, virtual time, the herd,
// liveness and leak detectors, shrinking, the story, porcupine's HTML view
// and rapid's fail files.
//
// The history the model checks holds what the ops recorded and, from the
// server's log, a linearizability.SessionExpiry for every session that
// expired or was closed, at the instant it ended: a model must accept
// those inputs (they end what a session held).
type Recipe[C any] struct {
	// Name names the recipe in stories and reports ("election").
	Name string
	// Path is the directory the recipe's nodes live in (default
	// "/recipes/<Name>"). Once every client has stopped, the tree may hold
	// nothing but it and its ancestors.
	Path string
	// New makes the handle one process uses, on that process's
	// connection, for the recipe at path: the Client holds the
	// connection, the session's event channel and the client's number.
	// ctx lives as long as the process: a goroutine of the handle's own (a
	// watch it follows, a loop over client.Events) may run on it. New runs
	// on the client's own goroutine.
	New func(ctx context.Context, client Client, path string) C
	// Ops are the operations a client may call. At least one is needed.
	Ops []Op[C]
	// Stop, if set, is what a client calls once when the case winds down,
	// before it ends: a resignation, a release. Its ctx has no deadline.
	Stop func(c C, ctx context.Context, call *Call) error
	// Model is the porcupine model the history must satisfy; nil checks
	// no history. Its inputs are what the ops record, and SessionExpiry.
	Model porcupine.Model
	// Check, if set, is asked of every client's handle after every step
	// (once everything has settled, on the harness's goroutine) whether
	// its account of itself holds, and whether it waits as it should: it
	// returns "" if so, and otherwise what is wrong. The harness reports
	// it as a StateReport finding. A call may end while time passes (its
	// deadline's timer fired) after a Check read the handle: what Check
	// reads of what the calls write needs a lock, or the race detector
	// reports it, as it sees no order in the bubble's virtual clock.
	Check func(c C, v View) string
	// Stalled, if set, is asked after every step of every client whose
	// call waits on something of its own (a watch, a timer: View.Waiting)
	// whether it waits for nothing: "" if it has reason to, and otherwise
	// why not. The harness reports it as a Liveness finding: a reader
	// waiting behind readers only, say.
	Stalled func(c C, v View) string
	// CheckReads gives Check and Stalled a session of the harness's own to
	// read the server with (View.Read).
	CheckReads bool
	// Settled, if set, is asked of every live process once every client
	// has stopped and time has let everything settle (every fault
	// healed, every watch event delivered), on the harness's goroutine:
	// "" if what the handle believes matches the server, else what
	// differs. v.Read is a session of the harness's own for reading the
	// server's state. The harness reports it as a Convergence finding.
	Settled func(c C, v View) string
	// Read, if set, is a read of the recipe's shared state (a counter, a
	// lease's data, a register) that the harness makes itself, through a
	// session of its own that no fault touches: after every step of the
	// schedule that changed the server's tree, and once more when the case
	// has settled. It records what it read (call.Record), and the Model
	// places the read among the clients' ops: a stale write that overlaps
	// the newer one, which the model alone may place first, shows when a
	// read after both sees it. read is not gated; call.Session is the
	// reading session's.
	Read func(read zktest.Conn, call *Call) error
	// Final, if set, checks the shared state once every client has
	// stopped and everything has settled (before the leak check): "" if
	// it holds, else what is wrong, reported as a Convergence finding. It
	// sees the server alone, so it holds when every client has crashed
	// too: every item put in a queue and never taken is still there, the
	// counter holds the sum of the increments that returned.
	Final func(read zktest.Conn) string
}

// Client is what one simulated process is given to make its handle
// with, as a program is given it by zk.Connect: its connection and its
// session's event channel, and the client's number.
type Client struct {
	// Conn is the process's connection: the fake's own, behind the
	// harness's gate, or, over real clients (WithRealClients),
	// go-zookeeper's *zk.Conn (ZK), its requests gated at the server.
	Conn zktest.Conn
	// Events is the session's event channel, as zk.Connect returns it:
	// StateDisconnected, StateHasSession, StateExpired and the rest, and
	// every watch event. As go-zookeeper's, it is buffered, and an event
	// that finds it full is dropped: a handle that listens reads it
	// without pause.
	Events <-chan zk.Event
	// N numbers the simulated client from 0, the same for every process
	// that takes its place after a crash, so that a recipe can give
	// clients roles (client 0 observes, the others campaign).
	N int
	// ZK is the same connection as go-zookeeper's own *zk.Conn, for code
	// that takes one; nil unless the campaign runs real clients
	// (WithRealClients). Conn is then ZK with its watch channels handed
	// over by the harness, as in process; code that reads ZK's own
	// channels hears its events as go-zookeeper delivers them.
	ZK *zk.Conn
}

// Op is one operation a client of a Recipe may call.
type Op[C any] struct {
	// Name names the call in the story ("Campaign").
	Name string
	// Enabled reports whether the client may call it now (a Resign only
	// while leading); nil means always. It runs on the client's
	// goroutine, between calls.
	Enabled func(c C) bool
	// Releases marks a call that gives something up (an Unlock, a
	// Release): the nodes its client deletes during it are releases, which
	// the herd rule holds to waking only waiters they unblock. (The first
	// node of a queue is a holder's whoever deletes it.)
	Releases bool
	// Joint marks a call that can return only once other clients make
	// calls of their own: a barrier's Enter and Leave. Once the other
	// clients have stopped it may wait for ever, so the wind-down cancels
	// its ctx when every client still in a call is in a joint one and
	// nothing has moved for jointWait (ten seconds); it must then return.
	// Whether it should have returned before is the recipe's to say, in
	// Stalled (every member arrived, and the barrier still waits).
	Joint bool
	// Call makes the call on the handle c. ctx may carry a deadline the
	// harness drew, and is cancelled when the schedule cancels the call or
	// the case ends. The error, if any, goes in the story. The handle
	// comes first so that a method of the handle's type can serve as Call
	// ((*MyHandle).campaign).
	Call func(c C, ctx context.Context, call *Call) error
}

// Call is one operation in progress, as an Op's Call sees it: where it
// records what the operation did, and the harness's services.
type Call struct {
	// mu is the client's lock, which guards what the call records: the
	// harness reads it once the call has returned, or its process crashed.
	mu       *sync.Mutex
	session  func() int64
	records  []record
	fence    func(token int64) bool
	sessions []func(session int64, last bool)
	crashed  []func()
}

// record is one operation a Call recorded for the model.
type record struct {
	input, output any
	unknown       bool
}

// Session returns the client's session now (0 while it has none): what a
// recorded input names as the session acting.
func (c *Call) Session() int64 { return c.session() }

// Record records an operation for the model, spanning this call: it took
// effect at some instant between the call and its return. An output that
// says "took effect or not" (the model's own unknown, as
// linearizability.ElectionUnknown) is the model's to read.
func (c *Call) Record(input, output any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records = append(c.records, record{input: input, output: output})
}

// Sessions asks, once the call has returned, for fn to be called with each
// session the client had during the call, in order; last is true for the
// one it had at the return. A call that waits may live through an expiry
// and go on in a new session, having held something, and let it go, in
// the old one: fn records what each session may have done. Ask before the
// call blocks: if the process crashes first, fn is called for every
// session it had, last false for each, and what the call recorded has an
// unknown outcome. fn runs on the harness's goroutine, with the handle
// quiet.
func (c *Call) Sessions(fn func(session int64, last bool)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sessions = append(c.sessions, fn)
}

// IfCrashed asks for fn to be called if the process crashes before the call
// returns: fn records what the call may have done by then (a release whose
// Delete may have applied), with an unknown outcome, as all a crashed call
// recorded has. Ask before the call blocks. fn runs on the harness's
// goroutine, with the handle quiet.
func (c *Call) IfCrashed(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.crashed = append(c.crashed, fn)
}

// RecordUnknown records an operation whose outcome nobody learned: it took
// effect at some instant after the call, or never.
func (c *Call) RecordUnknown(input any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records = append(c.records, record{input: input, unknown: true})
}

// Fence writes to the protected resource the harness keeps, with a fencing
// token, and reports whether the resource accepted it: it accepts a token
// not older than the newest it accepted, and refuses an older one. Make it
// the last thing the op does with the server, and record the write: a
// crash cannot then come between the write and its record.
func (c *Call) Fence(token int64) bool { return c.fence(token) }

// View is what a Recipe's Check and Settled see besides the handle.
type View struct {
	// Client is the client's number (from 0), as New was given it.
	Client int
	// Session is the client's session now.
	Session int64
	// Expired reports whether the server has ended a session (expired or
	// closed).
	Expired func(session int64) bool
	// Call names the op the client is in ("" between calls); Since is how
	// long it has been in it; Waiting is true while the call waits on
	// something of its own (a watch, a timer), not on the harness nor on
	// its connection: no request of the client's waits at the gate, no
	// fault holds it nor a watch event of its, and it is connected, to a
	// member that does not lag; Idle is how long it has waited so, since
	// the harness last let one of its requests go or first saw it waiting
	// so.
	Call    string
	Since   time.Duration
	Waiting bool
	Idle    time.Duration
	// SessionTimeout is the client's session timeout; Disconnected is
	// how long the client has been without a connection, as its session
	// events tell it (since it heard Disconnected; 0 once it hears
	// HasSession). A client disconnected for longer than its session
	// timeout cannot know that its session lives: a leader or holder
	// must then no longer say it leads or holds.
	SessionTimeout time.Duration
	Disconnected   time.Duration
	// Gated is true while a request of the client's to the server waits
	// at the gate: whatever the handle would learn from it, it has not
	// yet.
	Gated bool
	// Reachable is true while the client reaches the server: it has a
	// session, is neither cut off nor paused (noticed or not), and its
	// member does not lag. What a handle keeps on the server (a member's
	// node) it can keep only then.
	Reachable bool
	// Paused is true while the client's process is frozen (a Pause): its
	// code runs nothing, and cannot have acted on what happened meanwhile,
	// its session's expiry included; a check holds it to that once it
	// thaws.
	Paused bool
	// Nodes returns the ephemeral nodes of the client's session in the
	// recipe's directory.
	Nodes func() []string
	// Read is, in Settled and in a Check with CheckReads, a session of the
	// harness's own, not gated and never faulted, for reading what the
	// server holds.
	Read zktest.Conn
}

// Lock is the Target of a lock: each client loops Lock, critical section
// (with a write to a fenced resource, when the case checks fencing),
// Unlock, with the books and detectors the package documents:
// fuzz.Check(t, fuzz.Lock(newLocker)) fuzzes a lock.
//
// The lock loop is the one target the engine runs itself rather than as a
// Recipe: it is the target of any Locker, a user's or go-zookeeper's, not
// a built-in recipe, and its books (the fenced critical section, the
// queue's order for the herd rule, holds in doubt) are the engine's.
func Lock(newLocker NewLocker) Target { return lockTarget{newLocker} }

type lockTarget struct{ newLocker NewLocker }

func (l lockTarget) subject() *subject {
	return &subject{name: "lock", path: lockPath, newLocker: l.newLocker}
}

// LockZK is the Target of a lock whose code takes go-zookeeper's own
// *zk.Conn, as go-zookeeper's zk.Lock and most Go programs do: Lock's
// loop, with every client a real go-zookeeper client over a pipe to the
// fake (WithRealClients), handed to newLocker as it is. The code under
// test is not changed; a lock with no context for its Lock needs a
// one-line wrapper to be a Locker (see the package doc's example).
func LockZK(newLocker func(conn *zk.Conn, path string) Locker) Target {
	return lockZKTarget{newLocker}
}

type lockZKTarget struct {
	newLocker func(conn *zk.Conn, path string) Locker
}

func (l lockZKTarget) subject() *subject {
	newLocker := func(conn zktest.Conn, path string) Locker { return l.newLocker(conn.(*zk.Conn), path) }
	return &subject{name: "lock", path: lockPath, newLocker: newLocker, realOnly: true}
}

// subject is a Target as the harness runs it: a lock, or a recipe's
// operations with their types erased.
type subject struct {
	name string
	path string
	// newLocker is set for a lock.
	newLocker NewLocker
	// realOnly: the code under test takes a *zk.Conn, so its clients are
	// always real ones (WithRealClients).
	realOnly bool
	// The rest, for a Recipe.
	newHandle  func(ctx context.Context, client Client, path string) any
	ops        []opSpec
	stop       func(c any, ctx context.Context, call *Call) error
	model      porcupine.Model
	check      func(c any, v View) string
	stalled    func(c any, v View) string
	checkReads bool
	settled    func(c any, v View) string
	read       func(read zktest.Conn, call *Call) error
	final      func(read zktest.Conn) string
}

// opSpec is an Op with its handle's type erased.
type opSpec struct {
	name     string
	releases bool
	joint    bool
	enabled  func(c any) bool
	call     func(c any, ctx context.Context, call *Call) error
}

func (r Recipe[C]) subject() *subject {
	if r.New == nil || len(r.Ops) == 0 {
		panic(fmt.Sprintf("fuzz: recipe %q needs New and at least one Op", r.Name))
	}
	s := &subject{name: r.Name, path: r.Path, model: r.Model, checkReads: r.CheckReads, read: r.Read, final: r.Final}
	if s.name == "" {
		s.name = "recipe"
	}
	if s.path == "" {
		s.path = "/recipes/" + s.name
	}
	s.newHandle = func(ctx context.Context, client Client, path string) any {
		return r.New(ctx, client, path)
	}
	for _, op := range r.Ops {
		spec := opSpec{name: op.Name, releases: op.Releases, joint: op.Joint, call: func(c any, ctx context.Context, call *Call) error { return op.Call(c.(C), ctx, call) }}
		if op.Enabled != nil {
			spec.enabled = func(c any) bool { return op.Enabled(c.(C)) }
		}
		s.ops = append(s.ops, spec)
	}
	if r.Stop != nil {
		s.stop = func(c any, ctx context.Context, call *Call) error { return r.Stop(c.(C), ctx, call) }
	}
	if r.Check != nil {
		s.check = func(c any, v View) string { return r.Check(c.(C), v) }
	}
	if r.Stalled != nil {
		s.stalled = func(c any, v View) string { return r.Stalled(c.(C), v) }
	}
	if r.Settled != nil {
		s.settled = func(c any, v View) string { return r.Settled(c.(C), v) }
	}
	return s
}

// handleName names what a client makes, for findings.
func (s *subject) handleName() string {
	if s.isLock() {
		return "locker"
	}
	return s.name + " handle"
}

// isLock reports whether the subject is a lock, run by the lock loop.
func (s *subject) isLock() bool { return s.newLocker != nil }

// lockPath is the lock's directory in every case; the first Lock makes it
// and its parent.
const lockPath = "/locks/mutex"
