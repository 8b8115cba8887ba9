package fuzz

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/wire"
	"github.com/zksim/zksim/zkfake/zktest"
	"pgregory.net/rapid"
)

// This file is the harness's data: a case (harness), its clients (slot)
// and the processes that take a client's place in turn (incarnation), and
// what a case leaves (caseResult). What they do is in the files named for
// it: case.go runs a case, gate.go lets requests through, sessions.go
// follows sessions and cuts, fencing.go keeps the books of holds and the
// protected resource, rows.go the history's rows, story.go tells it.

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
	lastMade    time.Time // when the client made its last call

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
	// joint: the call in progress is a joint one (Op.Joint), which the
	// wind-down may cancel, once (jointCancelled).
	joint, jointCancelled bool
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
	conn    clientLink      // the process's connection, as the harness acts on it
	user    zktest.Conn     // and as the code under test is handed it
	events  <-chan zk.Event // the session's events, for the code under test
	zk      *zk.Conn        // go-zookeeper's own connection, over real clients
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
	replies   []handOverWait // replies that came after their step, waiting likewise (replies.go)
	heldCame  chan struct{}  // the harness's: tells it that one of these came
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
	// closedConn is closed, for the client's own goroutines to read.
	closedConn atomic.Bool
	// failedLocally is when a call of a real client last returned a lost
	// connection to its code, in Unix nanoseconds. The gate at the server
	// never sees such a failure: the call failed inside go-zookeeper
	// before it reached the server, or after, its reply lost with the
	// connection (the server then answered it, to nobody). The poll
	// detector must know that a retry follows a failure.
	failedLocally atomic.Int64
	// loopStart is the entry of the function the client loop's goroutine
	// started with, loopID its id, and calledBefore (guarded by mu) the
	// other goroutines that have called the server: the gate tells the
	// recipe's background work by them (background.go).
	loopStart    atomic.Uintptr
	loopID       atomic.Uint64
	calledBefore map[uint64]bool

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

// harness runs one case.
type harness struct {
	sub     *subject // what the case runs
	t       *rapid.T
	srv     *zkfake.Server
	pipe    *wire.Pipe // serves srv to real clients (WithRealClients); nil in process
	dir     string     // the directory of the lock's or the recipe's nodes
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
	// which is the draw that picks, among a client's calls to the server
	// waiting at its gate together, the one the current move lets go
	// (inc.chooseRequest; 0 outside moves).
	which int
	// reconnectTo is the member a client whose reply the current move
	// loses reconnects to (0: the one it is on).
	reconnectTo int
	// losing is true while the harness grants a request whose exchange
	// it has arranged to lose: the story tells the loss right after it.
	losing bool
	// grants counts the requests granted, and seed is the case's server
	// seed: together they order the replies that come after their step
	// (replies.go).
	grants int
	seed   uint64
	// heldCame is told when such a reply, or a watch event, comes, so
	// that an advance hands it over at once.
	heldCame chan struct{}

	// rec records the history porcupine checks; opSteps runs beside the
	// operations recorded during the case, index for index, with the
	// story's step each was told in (the session ends result adds from the
	// server's log come after them, without steps).
	rec     *linearizability.Recorder
	opSteps []int
	// admin is the harness's own session, which deletes clients' nodes;
	// reader another, which a Recipe's checks read the server with.
	admin, reader *zkfake.Conn
	// tokenless is what the case showed a lock without fencing tokens
	// cannot promise: an unfenced write after its session ended, which
	// the campaign reports once (Report.Tokenless).
	tokenless string
	// leftOut are the detectors left out of the campaign
	// (WithoutDetectors): their findings are noted, once a case each
	// (leftOutNoted), and the case goes on.
	leftOut, leftOutNoted map[Detector]bool
	// probedZxid is the server's zxid at the harness's last read of a
	// Recipe's shared state (Recipe.Read).
	probedZxid int64

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

// historyVerdict is porcupine's finding on a case's history, until its
// summary is explained.
type historyVerdict struct {
	finding    *Finding
	withWrites bool // the writes break it, not the lock alone
	tokens     bool // the tokens break it: without them the lock is fine
	model      bool // a Recipe's model finds it
	explained  bool
	named      int // the index in the case's ops of the call the summary names; -1 for none
}
