package fuzz

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/zktest"
)

// The gate is how the harness, not the Go scheduler, decides the
// interleaving. A simulated client's locker talks to a gatedConn; every call
// that would reach the server first registers a request and blocks until the
// harness grants it. The client loop also stops at points (about to Lock,
// holding, about to Unlock...) where the harness does its bookkeeping. After
// each grant the harness calls synctest.Wait, so the granted client runs
// until it is durably blocked again: at the gate, on a watch channel, on a
// timer. Requests are registered by client goroutines but only ever granted
// by the harness goroutine, which sees them all once the bubble is quiet.

// point is a place in the client loop where the client waits for the harness.
type point uint8

const (
	noPoint          point = iota // the request is a call to the server
	pointLock                     // about to call Lock
	pointLocked                   // Lock returned (err set)
	pointWrite                    // holding: about to write to the protected resource
	pointUnlock                   // leaving the critical section: about to call Unlock
	pointUnlocked                 // Unlock returned (err set)
	pointReentered                // holding: a reentrant Lock returned (err set)
	pointReleft                   // holding: the reentrant Unlock returned (err set)
	pointUnlockAgain              // an Unlock is under way: about to call it again from another goroutine
	// The points of a Recipe's client loop come last (see onPoint).
	pointOp         // about to call one of the recipe's ops, or Stop
	pointOpReturned // the op returned (err set)
	pointFence      // an op writes to the fenced resource (token set)
)

func (p point) String() string {
	switch p {
	case pointLock:
		return "lock"
	case pointLocked:
		return "locked"
	case pointWrite:
		return "write"
	case pointUnlock:
		return "unlock"
	case pointUnlocked:
		return "unlocked"
	case pointReentered:
		return "reentered"
	case pointReleft:
		return "releft"
	case pointUnlockAgain:
		return "unlock again"
	case pointOp:
		return "op"
	case pointOpReturned:
		return "op returned"
	case pointFence:
		return "fence"
	}
	return "call"
}

// request is one thing a client waits for the harness to allow.
type request struct {
	point  point
	method string // the call's name in the server's terms (create, getData...)
	path   string
	detail string // the call's other arguments, rendered
	watch  bool   // the call sets a watch
	// arrival orders the calls of one client that wait together at a
	// real client's gate: the order the server read them
	// (zktest.Request.Arrival). 0 in process, for points, and for calls
	// a closed Conn holds on the client's side.
	arrival int64
	// callers is where an in-process call was made: its goroutine's
	// stack, which tells apart two identical calls of one client that
	// wait together (see before); site is it rendered, once needed. Nil
	// for points and at a real client's gate, whose calls the server
	// numbered.
	callers []uintptr
	site    string
	// background: the call is the recipe's background work, not its
	// waiter's (background.go); the poll detector leaves it out.
	background bool
	err        error // a point's error: what Lock or Unlock returned
	// At pointLocked: the session and the fencing token the client had
	// when Lock returned.
	session int64
	token   int64
	// how is the way the client takes the step the harness grants at a
	// point (see how); at pointLocked, the way Lock was called, and got
	// whether it took the lock (a TryLock may not).
	how how
	got bool
	// At pointOp: the ops the client may call (indices in the recipe's
	// Ops), and, set by the harness, the op to call or whether to stop.
	// At pointOpReturned: the call, with what it recorded, and whether it
	// was the Stop.
	enabled []int
	op      int
	stop    bool
	call    *Call
	step    int // the story step in which the harness granted it
	at      time.Time
	// order places the call's reply among others that come after their
	// step; returned is set once the call has its reply, and late once
	// its grant's step settled before it had (see replies.go). Guarded by
	// the incarnation's mu.
	order    uint64
	returned bool
	late     bool
	// grant receives true to go on, false to stop (a point of a client
	// that is told to stop or has crashed).
	grant chan bool
}

// completion is a call that returned: what the harness tells in the story
// and what the poll detector counts.
type completion struct {
	req    *request
	result string
	err    error
	wrote  bool // a write that succeeded: the tree changed
	at     time.Time
}

// wait registers r and blocks until the harness answers. A dead
// incarnation's requests are answered at once with false.
func (inc *incarnation) wait(r *request) bool {
	r.grant = make(chan bool, 1)
	r.at = time.Now()
	inc.mu.Lock()
	if inc.dead {
		inc.mu.Unlock()
		return false
	}
	inc.pending = append(inc.pending, r)
	inc.mu.Unlock()
	return <-r.grant
}

// isDead reports whether the incarnation's process is dead.
func (inc *incarnation) isDead() bool {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	return inc.dead
}

// finish records what a granted call returned.
func (inc *incarnation) finish(r *request, result string, err error, wrote bool) {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	if inc.dead {
		return
	}
	r.returned = true
	inc.completed = append(inc.completed, completion{req: r, result: result, err: err, wrote: wrote && err == nil, at: time.Now()})
}

// nextRequest returns the pending request that comes first (see
// chooseRequest), or nil.
func (inc *incarnation) nextRequest() *request { return inc.chooseRequest(0) }

// chooseRequest returns one of the pending requests, or nil: the first in
// key order (at a real client's gate, of its calls the one the server read
// first), or, when the first is a call to the server and others are
// too, the which-th of those calls (modulo their number). A client's
// goroutines that call the server at once (a recipe's background create
// beside its listing, a guaranteed delete beside the next attempt) reach a
// real server in whichever order their goroutines run; a key order alone
// would always send the same one first, and a recipe wrong only in the
// other order would never be drawn. Zero, where shrinking goes, is the key
// order.
func (inc *incarnation) chooseRequest(which int) *request {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	if len(inc.pending) == 0 {
		return nil
	}
	// At a real client's gate, calls go in the order the server read
	// them, which is the order the client sent them (an old connection's
	// first), as ZooKeeper answers a session's requests in the order they
	// were sent; what the server did not number (points, calls a closed
	// Conn holds on the client's side) comes after, in key order, as in
	// process.
	sort.SliceStable(inc.pending, func(i, j int) bool { return inc.pending[i].before(inc.pending[j]) })
	calls := 0
	for calls < len(inc.pending) && inc.pending[calls].point == noPoint {
		calls++
	}
	if calls < 2 || inc.pending[0].arrival != 0 {
		// One call, or a real client's, which the server answers in
		// the order it read them whatever the draw (see also
		// orderDrawn).
		return inc.pending[0]
	}
	return inc.pending[which%calls]
}

// take removes r from the pending requests; the harness then answers it.
func (inc *incarnation) take(r *request) {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	for i, p := range inc.pending {
		if p == r {
			inc.pending = append(inc.pending[:i], inc.pending[i+1:]...)
			return
		}
	}
}

// drain returns and forgets the calls that returned since the last drain.
//
// Calls that return at one instant are put in the order they were granted:
// two requests that waited out a partition are answered together when it
// heals, and their goroutines report in whichever order the scheduler runs
// them, which the story must not show.
func (inc *incarnation) drain() []completion {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	out := inc.completed
	inc.completed = nil
	slices.SortStableFunc(out, func(a, b completion) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.req.step, b.req.step)
	})
	return out
}

// kill marks the incarnation dead: its pending and future requests are
// answered false at once, so its goroutines can wind down without the
// harness. It returns the requests that were pending.
func (inc *incarnation) kill() []*request {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	if !inc.dead {
		close(inc.killed)
	}
	inc.dead = true
	pending := inc.pending
	inc.pending = nil
	for _, r := range pending {
		r.grant <- false
	}
	return pending
}

// gatedConn is the zktest.Conn a client's locker uses: the fake's Conn
// wrapped (zktest.Wrap) so that every request waits at the harness's gate.
type gatedConn struct {
	zktest.Conn // conn, behind the gate
	inc         *incarnation
	conn        zktest.Conn // the fake's Conn itself
	leash       *leash      // follows the calls that do not wait for the harness
	// atServer: the gate is the served fake's, over real clients, whose
	// replies are sent before the gate hears of them (see replies.go).
	atServer bool
}

func newGatedConn(inc *incarnation, conn zktest.Conn, l *leash) *gatedConn {
	g := &gatedConn{inc: inc, conn: conn, leash: l}
	g.Conn = zktest.Wrap(conn, zktest.Hooks{Before: g.before, After: g.after, Events: g.forward, Local: g.local})
	return g
}

// before registers a request and waits until the harness grants it. A
// locker has no business closing the session it was given, but if it does,
// the close is a step like any call. CreateProtectedEphemeralSequential is
// one step too, as it is one call, though the fake may send a listing
// after a lost reply.
func (g *gatedConn) before(req zktest.Request) any {
	r := newCallRequest(req, g.atServer)
	r.background = r.callers != nil && g.inc.inBackground(r.callers)
	if g.inc.wait(r) {
		g.leash.gated()
	} else {
		// A dead incarnation's calls are not held: they go straight to
		// its crashed or closed Conn, which refuses them, so its
		// goroutines can end; the leash ends those that do not.
		g.leash.outside(describeCall(r), true)
	}
	return r
}

// after records what a granted call returned.
func (g *gatedConn) after(req zktest.Request, before any, reply zktest.Reply) {
	if g.inc.isDead() {
		g.leash.result(reply.Err)
	}
	r := before.(*request)
	g.inc.finish(r, describeReply(req, reply), reply.Err, req.Write)
	if !g.atServer {
		g.inc.awaitReply(r)
	}
}

// local lets SessionID, State and Server through: they read client-side
// state only, so they are not gated. They say what the Conn says, also once
// the process is dead (crashed, or the case is over): as go-zookeeper's, a
// closed Conn keeps its last session id, and a locker's goroutines must end
// on their own when their Conn is closed. The leash ends those that do not.
func (g *gatedConn) local(method string) { g.leash.outside(method, g.inc.isDead()) }

// AbandonSession gives up the process's session on the client's side
// alone, for code that does so by its own clock, as Curator does once its
// connection has been down for longer than the session timeout: the Conn
// opens a new session, while the server keeps the old one, and its
// ephemeral nodes, until it expires it (zkfake.Conn.AbandonSession). The
// story tells it. Code reaches it by asking its Conn for the method
// (conn.(interface{ AbandonSession() bool })); it reports false when the
// process has no session to give up, and over real clients, whose
// go-zookeeper Conn cannot.
func (g *gatedConn) AbandonSession() bool {
	g.local("AbandonSession")
	a, ok := g.conn.(interface{ AbandonSession() bool })
	return ok && !g.inc.isDead() && a.AbandonSession()
}

// SessionTimeout is the timeout the server granted the process's last
// session (zkfake.Conn.SessionTimeout), for code that counts it on its own
// clock, as Curator does before it gives up a session; 0 over real
// clients, whose go-zookeeper Conn does not tell it.
func (g *gatedConn) SessionTimeout() time.Duration {
	g.local("SessionTimeout")
	if t, ok := g.conn.(interface{ SessionTimeout() time.Duration }); ok {
		return t.SessionTimeout()
	}
	return 0
}

// describeReply renders what a call returned for the story.
func describeReply(req zktest.Request, reply zktest.Reply) string {
	switch req.Op {
	case "create", "createContainer", "createTTL":
		return reply.Path
	case "exists":
		return describeExists(reply.Exists, reply.Stat)
	case "getData", "setData", "getACL", "setACL":
		return describeStat(reply.Stat)
	case "getChildren":
		return describeChildren(reply.Children)
	}
	return ""
}

// forward hands a watch's event to the locker through a channel of the
// gate's own, so that the harness learns whether the locker took it: a
// change that wakes several clients is a herd only if they act on it, and a
// watch a locker set long ago and no longer waits on may fire unheeded. The
// send completes when the locker receives; then the event is noted with the
// session it was delivered to and the instant it arrived, which is how the
// server's log names the delivery.
func (g *gatedConn) forward(req zktest.Request, in <-chan zk.Event) <-chan zk.Event {
	inc, path := g.inc, req.Path
	session := g.conn.SessionID()
	// Watches are set in requests the harness grants one at a time, so
	// their number is the same in every run: it orders two events of one
	// path and type (a data watch and an exists watch on a node deleted)
	// that would otherwise be handed over in the order their goroutines
	// happened to register.
	inc.mu.Lock()
	inc.watches++
	n := inc.watches
	inc.mu.Unlock()
	out := make(chan zk.Event)
	go func() {
		defer close(out)
		ev, ok := <-in
		if !ok {
			return
		}
		arrived := time.Now()
		if !inc.awaitHandOver(fmt.Sprintf("%s\x00%d\x00%010d", StableName(path), ev.Type, n)) {
			return
		}
		select {
		case out <- ev:
			inc.mu.Lock()
			inc.taken = append(inc.taken, delivery{session: session, path: path, at: arrived})
			inc.mu.Unlock()
		case <-inc.killed:
		}
	}()
	return out
}

// A client's locker may wait on several watches at once, and the server may
// fire several of them at one instant (a session's end, a Close, a node and
// its neighbour deleted together). Were they all handed over as they came,
// which one the locker saw first would be up to the Go scheduler: so the
// harness hands them over one at a time, in a fixed order, letting the
// locker act on each before the next (see handOver).

// handOverWait is one watch event waiting for the harness.
type handOverWait struct {
	key   string
	ready chan struct{}
}

// awaitHandOver waits until the harness hands the event named key over, and
// reports false if the incarnation died first.
func (inc *incarnation) awaitHandOver(key string) bool {
	w := handOverWait{key: key, ready: make(chan struct{})}
	inc.mu.Lock()
	if inc.dead {
		inc.mu.Unlock()
		return false
	}
	inc.handOvers = append(inc.handOvers, w)
	inc.mu.Unlock()
	inc.tellHeld()
	select {
	case <-w.ready:
		return true
	case <-inc.killed:
		return false
	}
}

// handOver hands over the first waiting watch event, in key order, and
// reports whether there was one.
func (inc *incarnation) handOver() bool {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	if len(inc.handOvers) == 0 {
		return false
	}
	w := inc.takeFirstHandOver()
	close(w.ready)
	return true
}

// takeFirstHandOver removes and returns the waiting watch event that comes
// first in key order; inc.mu is held and one is waiting.
func (inc *incarnation) takeFirstHandOver() handOverWait { return takeFirst(&inc.handOvers) }

// takeFirst removes and returns the wait of waits that comes first in key
// order; waits holds one at least.
func takeFirst(waits *[]handOverWait) handOverWait {
	ws := *waits
	first := 0
	for i, w := range ws {
		if w.key < ws[first].key {
			first = i
		}
	}
	w := ws[first]
	*waits = append(ws[:first], ws[first+1:]...)
	return w
}

// delivery names a watch event as the server's log does: the session it
// went to, its path, the instant.
type delivery struct {
	session int64
	path    string
	at      time.Time
}

func describeExists(ok bool, st *zk.Stat) string {
	if !ok {
		return "does not exist"
	}
	return "exists, " + describeStat(st)
}

func describeStat(st *zk.Stat) string {
	if st == nil {
		return ""
	}
	s := fmt.Sprintf("czxid %#x", st.Czxid)
	if st.EphemeralOwner != 0 {
		s += fmt.Sprintf(", owner %#x", st.EphemeralOwner)
	}
	return s
}

func describeChildren(names []string) string {
	if len(names) == 0 {
		return "[]"
	}
	// Names are made stable (GUIDs elided) before they are sorted: a
	// locker's GUIDs may be random, and the story must not depend on them.
	sorted := make([]string, len(names))
	for i, n := range names {
		sorted[i] = StableName(n)
	}
	sort.Strings(sorted)
	return "[" + abbreviated(sorted, " ") + "]"
}

// grant lets s's next request go ahead.
func (h *harness) grant(s *slot, r *request) {
	inc := s.inc
	inc.take(r)
	r.step = h.cur.index
	h.grants++
	r.order = replyOrder(h.seed, h.grants)
	s.lastMove = time.Now()
	if r.point == noPoint {
		h.checkClosedConn(s)
		h.checkPoll(s, r)
		if r.watch && s.phase == phaseLocking {
			h.noteWaiting(s, r.path)
		}
		h.note("%s: %s", s.name(), describeCall(r))
		if h.losing {
			h.cur.lostAfter = len(h.cur.lines)
		}
		r.grant <- true
	} else {
		goOn := h.onPoint(s, r)
		h.checkStateReport(s, inc, r)
		r.grant <- goOn
	}
	h.settle()
	if r.point == noPoint {
		inc.outstanding(r)
	}
}
