package fuzz

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake"
	"pgregory.net/rapid"
)

const (
	// lockPath is the lock's directory in every case; the first Lock
	// makes it and its parent.
	lockPath = "/locks/mutex"
	// Sessions are drawn over the whole range ZooKeeper negotiates, 2 to
	// 20 ticks of a tickTime drawn per case (tickTimes): from 400ms to two
	// minutes. The client notices a partition at two thirds of its session
	// timeout and dials again a second later (go-zookeeper's rhythm). With
	// a short session that dial comes after the server has expired the
	// session, so every partition the client notices ends in an expiry;
	// with a long one (over 3s) it comes before, so a partition healed in
	// between ends with the session resumed: watches re-armed, a holder
	// back from suspended to held.
	//
	// Each client asks a little more than the one before (a little less,
	// at 20 ticks), so that no two clients' session timers fall due at the
	// same instant: timers due together fire in an order the runtime
	// picks, which would make a case unrepeatable.
	timeoutSpacing = 37 * time.Millisecond
	// stepTime is how far time moves at the start of every step, so that
	// every step happens at an instant of its own: the server's log can
	// then be told step by step, and faults injected in consecutive steps
	// start their timers at different instants.
	stepTime = time.Microsecond
	// stallLimit is how long, once faults are healed, clients may go
	// without any Lock or Unlock returning before the case is declared
	// stuck, in a case whose sessions are all short. It must outlast every
	// legitimate wait: a session timeout, the client's reconnect rounds,
	// and recipe.Mutex's 15s retry budget; a case with longer sessions
	// waits longer (harness.stallLimit).
	stallLimit = time.Minute
	// stallMoves bounds the moves clients may make in the wind-down
	// without any Lock or Unlock returning, for lockers that spin without
	// ever letting time pass.
	stallMoves = 5000
	// pollLimit is how many calls in a row a waiting client may make, each
	// after time has passed and with nothing changed on the server, before
	// it is said to poll.
	pollLimit = 3
	// unlockAttempts bounds how often a client retries an Unlock that
	// failed without saying the hold was lost. A client that its move does
	// not send on (see pointUnlocked) retries until the release settles, as
	// recipe.Mutex asks ("call Unlock again"); the others leave the release
	// pending and call Lock again, as a caller that ignores Unlock's error
	// does. The bound only keeps a locker whose Unlock fails for ever from
	// looping for ever; the wind-down reports one whose Unlock fails
	// windDownUnlockFailures times in a row long before.
	unlockAttempts = 1000
	// windDownUnlockFailures is how many Unlock calls of one client may
	// fail in a row, with every fault healed, before the client is said to
	// be stuck. A sound lock's Unlock retries within (recipe.Mutex for
	// 15s) and fails only when the connection stays lost.
	windDownUnlockFailures = 100
	// lingerTime is how long a case's goroutines get to end once the case
	// is over.
	lingerTime = time.Minute
)

// tickTimes are the tickTimes a case is drawn on, the development server's
// first (shrinking goes to it): session timeouts from 400ms to 4s, 2s to
// 20s, 12s to two minutes.
var tickTimes = [...]time.Duration{200 * time.Millisecond, 200 * time.Millisecond, time.Second, 6 * time.Second}

// sessionTicks maps a client's drawn session length to ticks, times two:
// the first two draws, where shrinking goes, are the lengths a case had
// before lengths were drawn over the whole range, 10 and 17.5 ticks (2s
// and 3.5s at 200ms): the first always ends a noticed partition in an
// expiry, the second can outlive it.
func sessionTicks(draw int) int {
	switch draw {
	case 0:
		return 20
	case 1:
		return 35
	}
	return 2 * draw
}

// sessionTimeout is the timeout client i asks for, given its drawn
// length, on a server of tick.
func sessionTimeout(draw, i int, tick time.Duration) time.Duration {
	base := time.Duration(sessionTicks(draw)) * tick / 2
	if base >= 20*tick {
		return base - time.Duration(i+1)*timeoutSpacing
	}
	return base + time.Duration(i)*timeoutSpacing
}

// The rows of the history that are no client's: the harness's own
// deletions of clients' nodes, and the session ends read from the server's
// log. The processes of clients are numbered from 0 (incarnation.row), so
// these take numbers from the other end.
const (
	operatorRow = math.MaxInt - iota
	serverRow
)

// phase is where a client is in its loop, as the harness sees it.
type phase uint8

const (
	phaseIdle phase = iota
	phaseLocking
	phaseHolding
	phaseUnlocking
)

// slot is one simulated client: a process that may crash and be replaced
// by a new incarnation.
type slot struct {
	id      int
	timeout time.Duration
	inc     *incarnation
	incs    int

	phase       phase
	inCS        bool
	acquireCall linearizability.Instant // when the open Lock was called
	releaseCall linearizability.Instant // when the open Unlock was called
	// unlockAttempts counts the Unlock calls of the current release.
	unlockAttempts int
	holdSession    int64 // the session that holds, when holding
	// goneAtUnlock: when the current release began (in step
	// releaseStep), the server held no node of holdSession's in the
	// lock's directory: the hold was lost already, and no Unlock of it may
	// return nil — unless a Delete of the client's since then went
	// unanswered (deleteInDoubt): then the client cannot tell its own
	// Delete from someone else's, and ZooKeeper gives it no way to ask.
	goneAtUnlock  bool
	deleteInDoubt bool
	releaseStep   int
	// heldByNode: when the lock was taken, the holder's session owned an
	// ephemeral node in the lock's directory (a lock on a persistent node
	// has no owner to ask about).
	heldByNode bool

	// The poll detector's state: the last call the client made while
	// waiting, and how many calls in a row polled.
	polls       int
	lastOK      bool      // it reached the server and was answered
	lastDone    time.Time // when it returned
	lastSig     [2]int    // the server's state then: writes so far, nodes
	lastSession int64

	// callSessions are the sessions the client has had since its Lock or
	// TryLock in progress began.
	callSessions []int64
	// revoked: someone else deleted the client's node since its Lock began.
	revoked bool
	// lockReturned is when the client's last Lock or TryLock returned.
	lockReturned linearizability.Instant
	// call names a Recipe client's operation in progress, when it is in
	// one (phaseLocking); lastMove is when the harness last let one of
	// the client's requests go.
	call     string
	lastMove time.Time
	// waitingSince is when the checks first saw the client waiting on
	// something of its own (View.Waiting), zero while it is not.
	waitingSince time.Time
	// made holds the nodes the client has created, in any session: a
	// watch it sets on one of them is no wait (see noteWaiting).
	made map[string]bool
}

func (s *slot) name() string { return fmt.Sprintf("client %d", s.id) }

// noteCallSession adds a session the client has during its Lock call.
func (s *slot) noteCallSession(id int64) {
	if id != 0 && !slices.Contains(s.callSessions, id) {
		s.callSessions = append(s.callSessions, id)
	}
}

// incarnation is one process of a client: its connection, its locker and
// the goroutine running its loop.
type incarnation struct {
	slot    *slot
	n       int
	conn    *zkfake.Conn
	gated   *gatedConn
	locker  Locker // a lock's
	handle  any    // or a Recipe's
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	row     int // the process's client number in the history's recorder
	fencing bool

	mu        sync.Mutex
	pending   []*request
	completed []completion
	taken     []delivery     // watch events the locker took from its channels
	handOvers []handOverWait // watch events waiting to be handed to the locker
	watches   int            // watches forwarded so far, to order events of one path and type
	killed    chan struct{}  // closed when the incarnation dies
	dead      bool
	panicked  string // what the locker panicked with
	stack     string // and where

	// lateNext: the next watch event is held back from the locker (see
	// holdLate); late is the one held, lateStep the step it was held in.
	// Guarded by mu.
	lateNext bool
	late     *handOverWait
	lateStep int

	// downSince is when the client last lost its connection, as its
	// session events tell it (Unix nanoseconds; 0 while connected).
	downSince atomic.Int64

	// Harness-only state.
	partitioned bool
	cutAt       time.Time // when the partition began
	paused      bool
	endCut      func() // ends the open partition or pause in the history's faults
	exited      bool
	// closed: the process closed its Conn, in step closedStep;
	// it makes one more Lock at most and then ends (a new process takes its
	// place). locksAfterClose counts them.
	closed          bool
	closedStep      int
	locksAfterClose int
	// callsAfterClose counts the requests made on the Conn once closed.
	callsAfterClose int
	// stopped: a Recipe client has been told to stop and made its Stop
	// call.
	stopped bool

	// cancelLock cancels the Lock in progress; guarded by mu.
	cancelLock context.CancelFunc
	// call is a Recipe client's call in progress; guarded by mu.
	call *Call
	// heard is what the locker's state listener heard, if it has one.
	heard stateHeard
}

// noteLink follows the client's connection by its session events: the
// client knows it lost the connection when it hears Disconnected, and that
// it is back when it hears HasSession.
func (inc *incarnation) noteLink(ev zk.Event) {
	switch {
	case ev.Type != zk.EventSession:
	case ev.State == zk.StateHasSession:
		inc.downSince.Store(0)
	case ev.State == zk.StateDisconnected && inc.downSince.Load() == 0:
		inc.downSince.Store(time.Now().UnixNano())
	}
}

// disconnected is how long the client has been without a connection, by
// what it heard; 0 while it has one.
func (inc *incarnation) disconnected() time.Duration {
	if since := inc.downSince.Load(); since != 0 {
		return time.Since(time.Unix(0, since))
	}
	return 0
}

// run is the client loop: Lock, critical section, Unlock, again and again,
// stopping at points where the harness keeps its books.
func (inc *incarnation) run(newLocker NewLocker) {
	defer close(inc.done)
	defer func() {
		if r := recover(); r != nil {
			inc.mu.Lock()
			inc.panicked, inc.stack = fmt.Sprint(r), string(debug.Stack())
			inc.mu.Unlock()
		}
	}()
	inc.locker = newLocker(inc.gated, lockPath)
	for {
		lock := &request{point: pointLock}
		if !inc.wait(lock) {
			return
		}
		got, err := inc.lock(lock.how)
		// What the hold is — its session, its token — is read the
		// moment Lock returns: by the time the harness lets the client
		// on, the session may have expired and been replaced.
		locked := &request{point: pointLocked, err: err, got: got, how: lock.how, session: inc.conn.SessionID()}
		if f, ok := inc.locker.(Fencer); ok && got {
			locked.token = f.Token()
		}
		if !inc.wait(locked) {
			return
		}
		if !got {
			if q, ok := inc.locker.(QueueReader); ok && lock.how == howTry && err == nil {
				// Who is ahead? The listing is a call like any other,
				// and the story shows its answer.
				_, _ = q.Contenders()
			}
			continue
		}
		if inc.fencing && !inc.wait(&request{point: pointWrite}) {
			return
		}
		unlock := &request{point: pointUnlock}
		for {
			if !inc.wait(unlock) {
				return
			}
			if unlock.how != howReenter {
				break
			}
			// Still holding: a reentrant Lock and Unlock pair, as nested
			// code that takes the same lock does.
			err := inc.locker.Lock(inc.ctx)
			if !inc.wait(&request{point: pointReentered, err: err}) {
				return
			}
			err = inc.locker.Unlock()
			if !inc.wait(&request{point: pointReleft, err: err}) {
				return
			}
			unlock = &request{point: pointUnlock}
		}
		w := unlock.how
		for attempt := 1; ; attempt++ {
			err := inc.unlock(w)
			unlocked := &request{point: pointUnlocked, err: err, how: w}
			if !inc.wait(unlocked) {
				return
			}
			// The harness says, with how, whether a failed Unlock is
			// tried again (plainly) or left pending while the client
			// moves on to its next Lock.
			if err == nil || attempt == unlockAttempts || releaseSettled(err) || unlocked.how == howGiveUp {
				break
			}
			w = howPlain
		}
	}
}

// releaseSettled reports whether an Unlock error says the hold is gone (so
// there is nothing to retry), rather than that the release may not have
// happened.
func releaseSettled(err error) bool {
	return errors.Is(err, recipe.ErrLockLost) || errors.Is(err, zk.ErrNotLocked) ||
		errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrNoNode)
}

// harness runs one case.
type harness struct {
	e       *engine
	t       *rapid.T
	srv     *zkfake.Server
	dir     string // the directory of the lock's or the recipe's nodes
	start   time.Time
	fencing bool
	slots   []*slot
	incs    []*incarnation // every incarnation, dead ones too

	story   []*step
	cur     *step
	finding *Finding
	// how is the way the client the current move lets go takes its step
	// (plain outside moves).
	how how
	// reconnectTo is the member a client whose reply the current move
	// loses reconnects to (0: the one it is on).
	reconnectTo int

	// rec records the history porcupine checks; opSteps runs beside the
	// operations recorded during the case, index for index, with the
	// story's step each was told in (the session ends result adds from the
	// server's log come after them, without steps).
	rec     *linearizability.Recorder
	opSteps []int
	// admin is the harness's own session, which deletes clients' nodes;
	// reader another, which a Recipe's checks read the server with.
	admin, reader *zkfake.Conn

	resourceToken int64 // the newest token the fenced resource accepted
	writes        int   // successful writes so far, for the poll detector
	stopping      bool
	sessions      map[int64]string // session id → the client it belongs to
	nSteps        int
	taken         map[delivery]bool // watch events lockers took
	members       int               // the ensemble's size
	foreign       []string          // children of the lock's directory that are no contenders
	lagging       map[int]bool      // the followers that lag

	woke map[*slot]time.Time // when each client's locker last took a watch event
	// waits and returns list, per session, the story's steps in which a
	// client set a watch during a Recipe call (it waits, or waits again)
	// and in which such a call returned: the herd detector tells from
	// them whether a client a change woke was unblocked by it.
	waits, returns map[int64][]int
	// releases lists, per session, the steps from and to which its client
	// was in a call that releases (Op.Releases; to -1 while it is).
	releases map[int64][][2]int
	cuts     []*cut // partitions and pauses whose outcome is not known yet
	tally    Faults // the faults injected, and how they ended
	// maxTimeout is the longest session timeout of the case's clients.
	maxTimeout time.Duration
	// stopped lists the members stopped to take the quorum away, and
	// quorumLost says since when.
	stopped    []int
	quorumLost time.Time

	end *caseEnd // how far the case's ending has gone
}

// cut is a partition or a pause, followed until its outcome is known: the
// session cut off expired, or its client is back on it.
type cut struct {
	inc     *incarnation
	session int64
	pause   bool
	healed  bool // the partition healed, or the process thawed
	noticed bool // the client had noticed the partition when it healed
	long    bool // the partition lasted over a minute
}

// caseResult is what a case leaves for the checks that run outside the
// bubble, and for the story.
type caseResult struct {
	finding  *Finding
	steps    int
	ops      []linearizability.Operation
	faults   []linearizability.Fault
	h        *harness        // for the story, rendered only when needed
	log      []zkfake.Record // the server's event log
	rendered string
	tally    Faults
	verdict  *historyVerdict // porcupine's finding, if it made one
}

// runCase draws and runs one case in the current bubble.
func runCase(t *rapid.T, e *engine) *caseResult {
	cfg := e.cfg
	clients := rapid.IntRange(minClients, cfg.Clients).Draw(t, "clients")
	// A Recipe's ops fence their writes themselves (Call.Fence).
	fencing := cfg.Fencing == FencingAlways && e.sub.isLock()
	if cfg.Fencing == FencingDrawn && e.sub.isLock() {
		fencing = rapid.Bool().Draw(t, "fencing")
	}
	seed := rapid.Uint64().Draw(t, "server seed")
	// A case runs on one server or on an ensemble of three, whose two
	// followers can lag.
	members := 1
	if rapid.Bool().Draw(t, "ensemble of three") || e.lagFromStart {
		members = 3
	}
	// The tickTime, and each client's session timeout in ticks.
	tick := tickTimes[rapid.IntRange(0, len(tickTimes)-1).Draw(t, "tick time")]
	lengths := make([]int, clients)
	for i := range lengths {
		lengths[i] = rapid.IntRange(0, 20).Draw(t, fmt.Sprintf("client %d's session timeout", i))
	}
	// Every directory's sequence counter starts at zero, or a few creates
	// before a place where ZooKeeper's names change shape: the int32 wrap
	// ("2147483647", then "-2147483648"), the width of "%010d"
	// ("-1000000000", then "-999999999"), the sign ("-000000001", then
	// "0000000000"). Every directory: the recipe's own and whatever it
	// makes below (a semaphore's lease directory), so the server starts
	// every new node's counter there (zkfake.WithSequenceStart).
	sequence := int32(0)
	if near := rapid.IntRange(0, 3).Draw(t, "sequence counter near"); near > 0 {
		k := int32(rapid.IntRange(0, 6).Draw(t, "creates before the change"))
		sequence = [...]int32{0, math.MaxInt32 - k, -1000000000 - k, -1 - k}[near]
	}
	// rapid draws a slice's length with a small mean; the schedule's length
	// is drawn on its own so that long schedules are common too.
	n := rapid.IntRange(1, cfg.Steps).Draw(t, "steps")
	schedule := rapid.SliceOfN(actionGen(clients), n, n).Draw(t, "schedule")

	h := &harness{
		e:        e,
		t:        t,
		srv:      zkfake.NewServer(zkfake.WithSeed(seed), zkfake.WithTickTime(tick), zkfake.WithEnsemble(members), zkfake.WithShuffledChildren(), zkfake.WithSequenceStart(sequence)),
		dir:      e.sub.path,
		members:  members,
		lagging:  map[int]bool{},
		taken:    map[delivery]bool{},
		start:    time.Now(),
		rec:      linearizability.NewRecorder(nil),
		fencing:  fencing,
		sessions: map[int64]string{},
		end:      &caseEnd{},
		woke:     map[*slot]time.Time{},
		waits:    map[int64][]int{},
		returns:  map[int64][]int{},
		releases: map[int64][][2]int{},
	}
	where := "a server"
	if members > 1 {
		where = fmt.Sprintf("an ensemble of %d (sessions go to its members in turn)", members)
	}
	loop := fmt.Sprintf("Lock, critical section%s, Unlock", map[bool]string{true: " (writing to a fenced resource)", false: ""}[fencing])
	if !e.sub.isLock() {
		loop = e.sub.describeLoop()
	}
	for i := range clients {
		s := &slot{id: i, timeout: sessionTimeout(lengths[i], i, tick)}
		h.slots = append(h.slots, s)
		h.maxTimeout = max(h.maxTimeout, s.timeout)
		if s.timeout > time.Minute {
			h.tally.LongSessions++
		}
	}
	if sequence != 0 {
		h.tally.WrapCases++
	}
	h.begin(fmt.Sprintf("%d clients start on %s (tickTime %v), each with a session of its own (timeouts %s), and loop: %s", clients, where, tick, h.describeTimeouts(), loop))
	if sequence != 0 {
		h.note("every directory's sequence counter starts at %d", sequence)
	}
	// The lock's directory may hold children that are no contenders:
	// names without a sequence number, one whose ten digits are no int32,
	// so no sequence number ZooKeeper makes, and names like a lock's
	// protected nodes (go-zookeeper's "_c_<guid>-", kazoo's "__lock__")
	// ending in no number ZooKeeper makes. A Recipe's directory holds its
	// own nodes only: what a foreign child means is the recipe's call.
	if foreign := e.sub.isLock() && rapid.Bool().Draw(t, "foreign children"); foreign {
		if foreign {
			lookalike := lockPath + "/_c_" + strings.Repeat("0", 32) + "-__lock__"
			h.foreign = []string{lockPath + "/readme", lockPath + "/leader.json", lockPath + "/snapshot-9999999999",
				lookalike + "backup", lookalike + "9999999999", lookalike + "12345abcde"}
		}
		h.prepareDirectory()
	}
	if e.lagFromStart {
		for member := 1; member < members; member++ {
			h.note("follower %d lags from the start", member)
			h.srv.SetLagging(member, true)
			h.lagging[member] = true
		}
	}
	for _, s := range h.slots {
		h.spawn(s)
	}
	h.settle()

	for _, a := range schedule {
		if h.finding != nil {
			break
		}
		h.apply(a)
		h.checkRecipe()
		h.checkInDoubt()
	}
	if h.finding == nil {
		h.windDown()
	}
	if h.finding == nil {
		h.finalChecks()
	}
	h.teardown()
	return h.result()
}

// prepareDirectory makes the lock's directory with its foreign children,
// through a session of the harness's own that it closes again.
func (h *harness) prepareDirectory() {
	admin := h.ownSession()
	var err error
	for _, p := range append(ancestry(h.dir), h.foreign...) {
		if err == nil {
			_, err = admin.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		}
	}
	if err != nil {
		panic(fmt.Sprintf("zkfuzz: preparing %s: %v", h.dir, err))
	}
	admin.Close()
	h.note("%s is made, with children that are no contenders: %s", h.dir, strings.Join(h.foreign, ", "))
}

// ancestry returns path's ancestors below the root, outermost first, and
// path itself.
func ancestry(path string) []string {
	var out []string
	for p := path; p != "/" && p != ""; p = p[:strings.LastIndexByte(p, '/')] {
		out = append([]string{p}, out...)
	}
	return out
}

// describeLong says which clients have long sessions.
// describeTimeouts lists the clients' session timeouts.
func (h *harness) describeTimeouts() string {
	var list []string
	for _, s := range h.slots {
		list = append(list, s.timeout.String())
	}
	return strings.Join(list, ", ")
}

// stallLimit is how long the wind-down waits without progress before it
// calls the case stuck: longer than any wait a session of the case's
// allows.
func (h *harness) stallLimit() time.Duration {
	return max(stallLimit, stallLimit/2+2*h.maxTimeout)
}

// spawn starts a new incarnation of s.
func (h *harness) spawn(s *slot) {
	s.incs++
	ctx, cancel := context.WithCancel(context.Background())
	inc := &incarnation{
		slot:    s,
		n:       s.incs,
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
		killed:  make(chan struct{}),
		row:     len(h.incs),
		fencing: h.fencing,
	}
	conn, _, err := h.srv.Connect(s.timeout, zkfake.WithEventCallback(inc.noteLink))
	if err != nil {
		panic(fmt.Sprintf("zkfuzz: connecting %s to the fake server: %v", s.name(), err))
	}
	inc.conn = conn
	inc.gated = newGatedConn(inc, conn, newLeash(h.end))
	s.inc = inc
	s.phase, s.inCS, s.polls, s.lastOK, s.call = phaseIdle, false, 0, false, ""
	h.incs = append(h.incs, inc)
	h.noteSession(inc)
	if h.e.sub.isLock() {
		go inc.run(h.e.sub.newLocker)
	} else {
		go inc.runOps(h.e.sub)
	}
}

// noteSession remembers which client a session belongs to, for the story.
func (h *harness) noteSession(inc *incarnation) {
	id := inc.conn.SessionID()
	if id == 0 {
		return
	}
	if _, ok := h.sessions[id]; !ok {
		name := inc.slot.name()
		if inc.n > 1 {
			name = fmt.Sprintf("%s (restart %d)", name, inc.n-1)
		}
		h.sessions[id] = name
	}
}

// settle waits until every goroutine of the bubble is durably blocked, then
// takes in what the clients did meanwhile.
func (h *harness) settle() {
	synctest.Wait()
	// Watch events fired together reach each locker one at a time.
	for handed := true; handed; {
		handed = false
		for _, inc := range h.incs {
			h.holdLate(inc)
			if inc.handOver() {
				handed = true
			}
		}
		if handed {
			synctest.Wait()
		}
	}
	released := false
	for _, s := range h.slots {
		inc := s.inc
		for _, c := range inc.drain() {
			h.onCompletion(s, c)
			if h.releaseLate(inc, c) {
				released = true
			}
		}
		h.noteSession(inc)
		if s.phase == phaseLocking {
			s.noteCallSession(inc.conn.SessionID())
		}
	}
	for _, inc := range h.incs {
		inc.mu.Lock()
		for _, d := range inc.taken {
			h.taken[d] = true
			if inc == inc.slot.inc && d.at.After(h.woke[inc.slot]) {
				h.woke[inc.slot] = d.at
			}
		}
		inc.taken = nil
		inc.mu.Unlock()
	}
	for _, inc := range h.incs {
		inc.mu.Lock()
		p, stack := inc.panicked, inc.stack
		inc.mu.Unlock()
		if p != "" && h.finding == nil {
			// The summary is what rapid compares between runs of a case;
			// the stack, with its addresses, goes in the story only.
			h.found(Panic, "%s's locker panicked: %s", inc.slot.name(), p)
			h.note("%s", stack)
		}
	}
	h.followCuts()
	h.reportRunaways()
	if released {
		h.settle()
	}
}

// followCuts settles the outcome of the partitions and pauses whose
// outcome is open: the session expired (however: of the cut, or of an
// expiry or a crash meanwhile), or the client is back on it.
func (h *harness) followCuts() {
	if len(h.cuts) == 0 {
		return
	}
	live := h.liveSessions()
	open := h.cuts[:0]
	for _, c := range h.cuts {
		switch {
		case !live[c.session] && c.pause:
			h.tally.PausesExpired++
		case !live[c.session]:
			h.tally.PartitionsExpired++
		case !c.healed || c.inc.conn.SessionID() != c.session || c.inc.conn.State() != zk.StateHasSession:
			open = append(open, c)
		case c.pause:
			h.tally.PausesSurvived++
		case c.noticed:
			h.tally.PartitionsResumed++
		default:
			h.tally.PartitionsUnnoticed++
		}
		if c.long && live[c.session] && c.healed && c.inc.conn.SessionID() == c.session && c.inc.conn.State() == zk.StateHasSession {
			h.tally.LongPartitionsSurvived++
		}
	}
	clear(h.cuts[len(open):])
	h.cuts = open
}

// openCut returns the open partition or pause of inc, nil if none.
func (h *harness) openCut(inc *incarnation) *cut {
	for _, c := range h.cuts {
		if c.inc == inc && !c.healed {
			return c
		}
	}
	return nil
}

// now is the virtual time since the case began.
func (h *harness) now() time.Duration { return time.Since(h.start) }

// returned is the instant of a client's return at t, which the harness
// hears of when the client reaches its next point: after every event of the
// harness at that instant. A client runs after the harness lets it, and
// before the next step, which happens at a later instant.
func (h *harness) returned(t time.Time) linearizability.Instant {
	return h.rec.At(t, linearizability.Last)
}

// found records the case's finding; the case stops at the first.
func (h *harness) found(d Detector, format string, args ...any) {
	if h.finding != nil {
		return
	}
	h.finding = &Finding{Detector: d, Summary: StableName(fmt.Sprintf(format, args...))}
	h.note("✗ %s: %s", d, h.finding.Summary)
}

// liveSessions returns the sessions the server holds now.
func (h *harness) liveSessions() map[int64]bool {
	live := map[int64]bool{}
	for _, id := range h.srv.Sessions() {
		live[id] = true
	}
	return live
}

// grant lets s's next request go ahead.
func (h *harness) grant(s *slot, r *request) {
	inc := s.inc
	inc.take(r)
	r.step = h.cur.index
	s.lastMove = time.Now()
	if r.point == noPoint {
		h.checkClosedConn(s)
		h.checkPoll(s, r)
		if r.watch && s.phase == phaseLocking {
			h.noteWaiting(s, r.path)
		}
		h.note("%s: %s", s.name(), describeCall(r))
		r.grant <- true
	} else {
		goOn := h.onPoint(s, r)
		h.checkStateReport(s, inc, r)
		r.grant <- goOn
	}
	h.settle()
}

// onPoint keeps the books at a point of s's loop and says whether the
// client goes on.
func (h *harness) onPoint(s *slot, r *request) bool {
	if r.point >= pointOp {
		return h.onOpPoint(s, r)
	}
	inc := s.inc
	switch r.point {
	case pointLock:
		if h.stopping {
			inc.exited = true
			h.note("%s is done and stops", s.name())
			return false
		}
		if h.replaceClosed(s) {
			return false
		}
		r.how = inc.lockFor(h.how)
		if inc.closed {
			// The one Lock after the Close has no deadline of its own:
			// it must fail at once all the same.
			inc.locksAfterClose++
			r.how = howPlain
		}
		s.callSessions = s.callSessions[:0]
		s.noteCallSession(inc.conn.SessionID())
		s.phase, s.revoked = phaseLocking, false
		s.acquireCall = h.rec.Now()
		s.polls, s.lastOK = 0, false
		h.note("%s calls %s%s", s.name(), r.how.lockCall(), describePath(inc.locker))

	case pointLocked:
		// Lock returned when the client registered this point, at the
		// end of that instant: after everything the harness did then.
		s.phase = phaseIdle
		ret := h.returned(r.at)
		in := linearizability.MutexInput{Op: linearizability.Acquire, Lock: lockPath, Session: r.session}
		if r.how == howTry && r.err == nil {
			in.Op = linearizability.TryLock
		}
		s.lockReturned = ret
		// A Lock or TryLock may have held the lock for a while, and let
		// it go again, before it returned: its node was first in the
		// queue (and another's TryLock rightly found the lock taken), and
		// then the call gave up, or its session expired and it queued
		// again with the next. So for each session the client had during
		// the call, other than the one that holds at the end, there is an
		// acquisition and a release of unknown outcome within the call.
		s.noteCallSession(r.session)
		for _, id := range s.callSessions {
			// A TryLock that found the lock taken never had its node
			// first in its last session; a Lock that holds at the end
			// held nothing before in it — or, if someone deleted its node
			// meanwhile and it queued again, held it in all but name,
			// which only another client's TryLock could have seen, and
			// such a TryLock claims nothing (lockOverlapped).
			if id == r.session && (r.got || r.how == howTry && r.err == nil) {
				continue
			}
			h.add(inc.row, linearizability.MutexInput{Op: linearizability.Acquire, Lock: lockPath, Session: id}, linearizability.MutexUnknown{}, s.acquireCall, ret)
			h.add(inc.row, linearizability.MutexInput{Op: linearizability.Release, Lock: lockPath, Session: id}, linearizability.MutexUnknown{}, s.acquireCall, ret)
		}
		switch {
		case r.err != nil:
			h.note("%s's %s fails: %v", s.name(), r.how.lockCall(), r.err)
			return true
		case !r.got:
			if h.lockOverlapped(s) {
				// Another client's Lock was under way meanwhile: its node
				// may have been first in the queue, the lock held in all
				// but name, and let go again before that Lock returned
				// holding through another node (a stray twin of a create
				// whose reply was lost, a node someone deleted) — which
				// no recorded operation shows. The answer claims nothing.
				in.Op = linearizability.Acquire
			}
			h.add(inc.row, in, linearizability.MutexOutput{}, s.acquireCall, ret)
			h.note("%s's TryLock finds the lock taken", s.name())
			return true
		}
		h.add(inc.row, in, linearizability.MutexOutput{OK: true, Token: r.token}, s.acquireCall, ret)
		s.phase, s.inCS = phaseHolding, true
		s.holdSession = r.session
		s.heldByNode = h.holdsNode(r.session)
		h.note("%s holds the lock (session %#x%s) and enters its critical section", s.name(), r.session, describeToken(r.token))
		h.checkExclusion(s)

	case pointWrite:
		h.write(s)

	case pointUnlock:
		r.how = inc.unlockFor(h.how)
		if r.how == howReenter && !inc.closed {
			h.note("%s, still in its critical section, calls Lock again on the handle that holds the lock", s.name())
			return true
		}
		if r.how == howReenter {
			r.how = howPlain
		}
		s.inCS = false
		s.phase, s.unlockAttempts = phaseUnlocking, 0
		s.releaseCall = h.rec.Now()
		// The session now counts too: a reentrant Lock after the hold's
		// session expired acquires afresh, in the next.
		s.goneAtUnlock = s.heldByNode && !h.holdsNode(s.holdSession) && !h.holdsNode(inc.conn.SessionID())
		s.deleteInDoubt, s.releaseStep = false, h.cur.index
		h.note("%s leaves its critical section%s and calls %s", s.name(), describeState(inc.locker), r.how.unlockCall())

	case pointReentered:
		if r.err != nil {
			h.note("%s's reentrant Lock fails: %v; it calls Unlock for it all the same", s.name(), r.err)
		} else {
			h.note("%s's reentrant Lock returns; it calls Unlock for it", s.name())
		}

	case pointUnlockAgain:
		h.note("%s, its Unlock under way, calls UnlockContext with a deadline of %v from another goroutine (a deferred Unlock racing an explicit one)", s.name(), shortDeadline)

	case pointReleft:
		if r.err != nil {
			h.note("%s's Unlock of the reentrant Lock fails: %v", s.name(), r.err)
		} else {
			h.note("%s's Unlock of the reentrant Lock returns, and the client is still in its critical section", s.name())
		}

	case pointUnlocked:
		// A client retries an Unlock that failed without saying the hold
		// was gone; the attempts are one release, from the first call to
		// the last return. Only a release that returned nil claims
		// something: that the session held the lock until it let go. An
		// error leaves the outcome open even when it says the hold was
		// lost (ErrLockLost): a Delete whose reply was lost may have
		// released the lock just before the session expired, and the
		// client cannot tell which. A client may also leave a failed
		// release pending and go on to its next Lock, as a caller that
		// ignores Unlock's error does; the outcome is then open too.
		in := linearizability.MutexInput{Op: linearizability.Release, Lock: lockPath, Session: s.holdSession}
		s.unlockAttempts++
		switch {
		case r.err == nil:
			h.add(inc.row, in, linearizability.MutexOutput{OK: true}, s.releaseCall, h.returned(r.at))
			h.note("%s's %s returns", s.name(), r.how.unlockCall())
			// A process that closed its Conn ended its session itself,
			// and knows it.
			if s.goneAtUnlock && !s.deleteInDoubt && !inc.closed {
				h.found(MutualExclusion, "%s's %s returned nil at step %d, but when its release began at step %d the server held no node of its session %#x: the hold was lost before, and Unlock must say so (ErrLockLost), or the caller never learns its critical section overlapped the next holder's",
					s.name(), r.how.unlockCall(), h.cur.index, s.releaseStep, s.holdSession)
			}
		case releaseSettled(r.err):
			h.addUnknown(inc.row, in, s.releaseCall)
			h.note("%s's %s says the hold was gone: %v", s.name(), r.how.unlockCall(), r.err)
		case h.how != howPlain && h.how < numHows || inc.closed:
			// Any way but the plain one sends the client on (howGiveUp
			// names it; the other ways lend it their draws, so that about
			// half the failed Unlocks are left pending).
			h.addUnknown(inc.row, in, s.releaseCall)
			h.note("%s's %s fails: %v; the client leaves the release pending and moves on", s.name(), r.how.unlockCall(), r.err)
			r.how = howGiveUp
		case s.unlockAttempts < unlockAttempts:
			h.note("%s's %s fails, and the client calls Unlock again: %v", s.name(), r.how.unlockCall(), r.err)
			r.how = howPlain
			return true
		default:
			h.addUnknown(inc.row, in, s.releaseCall)
			h.note("%s's Unlock fails, for the last time: %v", s.name(), r.err)
		}
		s.phase, s.unlockAttempts = phaseIdle, 0
	}
	return true
}

// nodesOf returns the ephemeral nodes session owns in the lock's (or the
// recipe's) directory.
func (h *harness) nodesOf(session int64) []string {
	var nodes []string
	for _, p := range h.srv.Ephemerals(session) {
		if strings.HasPrefix(p, h.dir+"/") {
			nodes = append(nodes, p)
		}
	}
	return nodes
}

// holdsNode reports whether session owns a node in the lock's directory.
func (h *harness) holdsNode(session int64) bool { return len(h.nodesOf(session)) > 0 }

// replaceClosed ends s's process if its Conn was closed and it has made
// its one call since: a new process takes its place. It reports whether it
// did.
func (h *harness) replaceClosed(s *slot) bool {
	if !s.inc.closed || s.inc.locksAfterClose == 0 {
		return false
	}
	h.note("%s's process, its Conn closed, ends and restarts as %s, with a session of its own", s.name(), restartName(s))
	h.spawn(s)
	return true
}

// token reads the locker's fencing token, 0 if it has none.
func (h *harness) token(inc *incarnation) int64 {
	if f, ok := inc.locker.(Fencer); ok {
		return f.Token()
	}
	return 0
}

func describeToken(token int64) string {
	if token == 0 {
		return ""
	}
	return fmt.Sprintf(", token %d", token)
}

// checkExclusion is the direct mutual-exclusion check: s has just entered
// its critical section; nobody else may be in theirs. A holder whose
// session has expired may still believe it holds — that is what fencing is
// for — so only holders whose sessions are alive count.
func (h *harness) checkExclusion(s *slot) {
	live := h.liveSessions()
	if !live[s.holdSession] || s.revoked {
		return
	}
	for _, o := range h.slots {
		// A holder whose node someone else deleted holds nothing, though
		// it may not know yet.
		if o == s || !o.inCS || !live[o.holdSession] || o.revoked {
			continue
		}
		step, token := h.entered(s.inc)
		ostep, otoken := h.entered(o.inc)
		h.found(MutualExclusion, "%s entered its critical section at step %d%s while %s had been in its own since step %d%s, both sessions alive (%#x and %#x)",
			s.name(), step, withToken(token), o.name(), ostep, withToken(otoken), s.holdSession, o.holdSession)
		return
	}
}

// write is the holder's write to the protected resource. A Fencer's write
// carries its token and the resource refuses a token older than the newest
// it accepted; an unfenced write is always accepted.
func (h *harness) write(s *slot) {
	inc := s.inc
	_, fenced := inc.locker.(Fencer)
	if lostAlready(inc.locker) {
		h.note("%s's lock says the hold is lost, and it skips its write", s.name())
		return
	}
	token := h.token(inc)
	if fenced && token == 0 {
		h.note("%s has no fencing token any more (its locker knows the hold is lost) and skips its write", s.name())
		return
	}
	accepted := !fenced || token >= h.resourceToken
	if accepted && fenced {
		h.resourceToken = token
	}
	at := h.rec.Now()
	h.add(inc.row, linearizability.MutexInput{Op: linearizability.Write, Lock: lockPath, Session: s.holdSession, Token: token}, linearizability.MutexOutput{OK: accepted}, at, at)
	verdict := "the resource accepts it"
	if !accepted {
		verdict = fmt.Sprintf("the resource refuses it: it has seen token %d", h.resourceToken)
	}
	h.note("%s writes to the protected resource%s: %s", s.name(), describeToken(token), verdict)
	if accepted && !fenced && !h.liveSessions()[s.holdSession] {
		h.found(UnfencedWrite, "%s wrote to the protected resource at step %d after its session %#x had %s at step %d%s, and nothing refused the write (the locker hands out no fencing token)",
			s.name(), h.cur.index+1, s.holdSession, h.endedHow(s.holdSession), h.expiryStep(s.holdSession), h.otherHolder(s))
	}
}

// add records an operation of row (a process's number, or one of the rows
// that are no client's), told in the current step.
func (h *harness) add(row int, in, out any, call, ret linearizability.Instant) {
	h.rec.Add(row, in, out, call, ret)
	h.opSteps = append(h.opSteps, h.cur.index+1)
}

// addUnknown records an operation of the process numbered row whose
// outcome the client never learns, told in the current step.
func (h *harness) addUnknown(row int, in any, call linearizability.Instant) {
	h.rec.AddUnknown(row, in, call)
	h.opSteps = append(h.opSteps, h.cur.index+1)
}

// onCompletion takes in a call that returned: the story tells it and the
// poll detector counts it.
func (h *harness) onCompletion(s *slot, c completion) {
	if strings.HasPrefix(c.req.method, "create") && c.err == nil && c.result != "" {
		if s.made == nil {
			s.made = map[string]bool{}
		}
		s.made[c.result] = true
	}
	switch {
	case c.req.step != h.cur.index:
		// A call granted in an earlier step (it waited out a partition):
		// say whose it was.
		h.note("  %s's %s returns %s", s.name(), describeCall(c.req), describeResult(c.result, c.err))
	case c.err != nil || c.result != "":
		h.note("  → %s", describeResult(c.result, c.err))
	}
	if c.wrote {
		h.writes++
	}
	if c.req.method == "delete" && recipe.IsConnectionLoss(c.err) {
		s.deleteInDoubt = true
	}
	s.lastOK = s.phase == phaseLocking && !(c.err != nil && (recipe.IsConnectionLoss(c.err) || errors.Is(c.err, zk.ErrSessionExpired) || errors.Is(c.err, zk.ErrClosing)))
	s.lastDone, s.lastSig, s.lastSession = c.at, h.signature(), s.inc.conn.SessionID()
}

// signature changes whenever the tree does: a client's write succeeded or a
// session's end deleted nodes.
func (h *harness) signature() [2]int {
	return [2]int{h.writes, h.srv.NodeCount()}
}

// checkPoll is the poll detector, run as the harness grants a waiting
// client's call: the client polls if it made this call after sleeping on a
// timer (its previous call returned at an earlier instant than this one was
// made), with its previous call answered and nothing changed on the server
// since. A waiter that waits for a watch makes its calls back to back after
// each change; a retry after a lost connection follows a failed call.
func (h *harness) checkPoll(s *slot, r *request) {
	if s.phase != phaseLocking {
		s.polls = 0
		return
	}
	// A call the locker makes because a watch event woke it is no poll,
	// whatever the event was for (a write from outside the clients does
	// not show in the signature).
	woken := h.woke[s].After(s.lastDone)
	if s.lastOK && !woken && r.at.After(s.lastDone) && h.signature() == s.lastSig && s.inc.conn.SessionID() == s.lastSession {
		s.polls++
	} else {
		s.polls = 0
	}
	if s.polls >= pollLimit {
		h.found(Herd, "%s polls while it waits: %d calls in a row, each made after sleeping, with nothing changed on the server in between", s.name(), s.polls)
	}
}

// teardown ends the case: every live process closes its Conn (as a
// program does when it shuts down; crashed ones stay crashed), the server
// stops, and the harness stops scheduling. Then every goroutine of the case
// must end: the bubble may not be left with goroutines blocked for ever.
// Time is virtual, so waiting costs little. Goroutines that spin meanwhile
// or still run after a linger are ended by their leash and reported.
func (h *harness) teardown() {
	h.tick()
	h.begin("the case ends: each live process closes its Conn, the server stops, and the clients' goroutines get time to end")
	h.closeAdmin()
	h.closeReader()
	for _, s := range h.slots {
		if inc := s.inc; !inc.isDead() {
			inc.gated.leash.ended(s.inCall())
			inc.conn.Close()
		}
	}
	h.srv.Close()
	h.end.mu.Lock()
	h.end.over, h.end.at = true, time.Now()
	h.end.mu.Unlock()
	for _, inc := range h.incs {
		inc.kill()
		inc.cancel()
	}
	for i := 0; i < 120 && !h.allDone(); i++ {
		synctest.Wait()
		h.reportRunaways()
		time.Sleep(time.Second)
	}
	// A locker's own goroutines may outlive its client loop for a while,
	// retrying on the dead connection (recipe.Mutex's Unlock does, for
	// 15s). After the linger, the leash ends any that still call their
	// Conn, at their next call, and the harness reports it.
	time.Sleep(lingerTime)
	h.end.mu.Lock()
	h.end.lingered = true
	h.end.mu.Unlock()
	time.Sleep(lingerTime)
	synctest.Wait()
	h.reportRunaways()
}

func (h *harness) allDone() bool {
	for _, inc := range h.incs {
		select {
		case <-inc.done:
		default:
			return false
		}
	}
	return true
}
