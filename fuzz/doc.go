// Package fuzz tests ZooKeeper coordination recipes by fuzzing them: it
// runs a recipe many times over, on the in-memory ZooKeeper of package
// zkfake, under a drawn schedule of client moves and faults, and looks for
// what the recipe must never do.
//
// [Check] does it from a test, [Run] from a program (cmd/zkfuzz is one),
// and [Fuzz] gives `go test -fuzz` a target. What they fuzz is a [Target]:
//   - a [Recipe] of your own: the handle each simulated client makes, the
//     operations ([Op]) a client calls in its loop, each recording what it
//     did ([Call.Record]), and the porcupine model the recorded history
//     must satisfy (see "Any recipe" below);
//   - the built-in recipes of package fuzz/targets (targets.Election,
//     targets.RWMutex, targets.Semaphore), each such a Recipe;
//   - [Lock], a lock: any [Locker] — Lock(ctx) and Unlock() — made by a
//     [NewLocker] on the zktest.Conn each simulated client passes it; a
//     lock that hands out fencing tokens also implements [Fencer].
//     Check(t, Lock(newLocker)) fuzzes one.
//
// Most of what follows is told of a lock, the first target the harness
// had; a Recipe gets the same cases, faults, detectors that apply to any
// recipe, stories and fail files.
//
// # A case
//
// A case is a fresh zkfake server (a single one, or an ensemble of three
// whose followers can lag) inside a testing/synctest bubble, where time is
// virtual, and 2 to 8 simulated clients, each looping in a goroutine of its
// own: Lock, critical section (where it may write to a protected resource),
// Unlock. Every call a client's lock makes to the
// server waits at a gate until the harness lets it through, and the client
// loop stops at points (Lock returned, about to Unlock...) where the harness
// keeps its books. After letting one client go, the harness waits until
// every goroutine of the bubble is durably blocked again (synctest.Wait):
// the harness, not the Go scheduler, decides who moves next, so the same
// draws give the same history, byte for byte.
//
// The schedule is a list of actions rapid draws and shrinks: a client's next
// move; a move whose request is lost before the server applies it, or whose
// reply is lost after (the quorum may go down with it); a partition and its
// healing; a session expiry; a crash, after which the client restarts (a new
// process, told as "client N (restart M)", with a session of its own); a
// process frozen past its session timeout (a long GC pause) and thawed; a
// follower that starts lagging, so that its sessions read stale data and hear
// their watches late, and catches up; an expiry after which the client's next
// session opens on a lagging follower; a majority of the ensemble stopped (no
// quorum: nothing is served, no session expires) and started again at once,
// once every session's timeout has passed, or minutes later; a watch event
// held back from the recipe until the reply to the client's next request, as
// go-zookeeper's event channels allow; time passing. Every directory's
// sequence counter may start near the int32 wrap (zkfake.WithSequenceStart).
// Each case then winds down: every fault heals; the sessions no client holds
// expire (orphans.go); the clients finish and stop; their sessions close.
//
// Partitions end both ways. A case's tickTime is drawn (200ms, 1s, 6s),
// and each client's session timeout over the whole range ZooKeeper
// negotiates, 2 to 20 ticks: from 400ms to two minutes. A client notices a
// cut at two thirds of its session timeout and dials again a second later,
// which for a session over 3s comes before the server expires it. A heal is
// drawn to come at once, once the client has noticed, once the session has
// expired, or just before it would (over a minute after the cut, for a
// session of minutes); a frozen process thaws at once
// or once its session has expired. A client hears what it missed either
// way: the fake holds the watch events it sends into a cut connection and
// delivers them if the link heals before the client notices, and a client
// that reconnects re-arms its watches and hears of every watched node that
// changed since the last zxid it saw, as ZooKeeper's setWatches does. So a
// holder may find its session resumed (suspended, then held again) or
// expired. Report.Faults counts the outcomes.
//
// # What a lock client draws
//
// Clients draw what they call, each only if the lock offers it (optional
// interfaces, so that [Locker] stays Lock and Unlock): Lock with a short or
// long deadline, a Lock cancelled while it waits, TryLock ([TryLocker]),
// UnlockContext with a deadline ([ContextUnlocker]), a reentrant
// Lock/Unlock pair while holding ([Reentrant]), a failed Unlock left
// pending while the client goes on to its next Lock (as `defer m.Unlock()`
// does), Unlock from two goroutines at once, the second with a short
// deadline ([SharedHandle]: a deferred Unlock racing an explicit one), and
// a process that closes its Conn — holding or not — makes its Unlock and
// one more Lock, and ends: more than 20 requests on a closed Conn is a
// liveness finding (a handle whose library has a close of its own, a
// [ClientCloser], is closed through it first, as a program closes kazoo's
// or Curator's client). A holder checks Lost() before it writes, where the lock
// has one, and every other client listens to its lock's changes of state
// (recipe.WithStateListener). Watch events the server fires together reach
// each locker one at a time, in a fixed order, and so do the replies to
// calls that waited out a cut or an outage, in an order drawn from the
// seed, so that the Go scheduler never picks which it sees first nor which
// of its goroutines runs first. When two of a client's goroutines call the
// server at once (a background create beside a listing, a guaranteed
// delete beside the next attempt), which goes first is drawn with the
// move, as in a real process either may reach the connection first; a
// move drawn as zero, where shrinking goes, lets the first in the order
// of their method and path go, and so does a move whose exchange is lost
// and every move of the wind-down; two identical calls (a lock loop's
// listing and a background search's, of one directory) are told apart by
// where in the code each was made. The lock's directory (two levels deep,
// which the first Lock makes) may start with foreign children: names
// without a sequence number, ten digits that are no int32, and names like
// a lock's protected nodes that end in no number ZooKeeper makes. Every
// listing comes in an order drawn from the seed, as ZooKeeper's hash-set
// order would.
//
// cmd/zkfuzz prints how often each fault was drawn and how it ended; for
// `go run ./cmd/zkfuzz -cases=2000 -seed=1` (2026-12-04): 710 partitions (275
// healed before the client noticed, 109 resumed after a reconnect, 326
// expired), 526 pauses (291 thawed in time, 235 expired), 476 lost requests,
// 536 lost replies, 729 expiries, 612 crashes, 176 lags, 25 partitions over a
// minute (14 survived), 243 quorum losses (19 over a minute, 91 with a lost
// reply), 252 new sessions on a lagging follower, 557 late watch events (456
// after a later reply), 980 sessions over a minute long, 1,458 cases near a
// sequence wrap.
//
// # Detectors
//
//   - mutual-exclusion: a client enters its critical section while another
//     is in its own, both sessions alive (a holder whose session expired
//     may still believe it holds: that is what fencing is for); or
//     porcupine, with the linearizability package's mutex model and the
//     session expiries from the server's event log, finds no order of the
//     recorded Lock and Unlock calls that a lock allows, fencing tokens
//     that grow with each acquisition included; or an Unlock returns nil
//     though the server no longer held the client's node when the release
//     began (unless a Delete of the client's went unanswered meanwhile:
//     then it cannot tell its own Delete from someone else's).
//   - herd: one change (a release, a crash's or an expiry's deletions, a
//     new contender) wakes more than one waiting client — a client with a
//     node in the queue that takes the watch event the server's log shows
//     the change delivered, at once or late (a lagging follower catching
//     up, a watch fired on reconnect): each delivered event is put down to
//     the change of its zxid, or else to the last change to its path.
//   - polling: a waiting client polls: three calls in a row, each after
//     sleeping, with nothing changed. (A spin without sleeping is
//     liveness, below.) Only the waiter's calls count: those on the
//     goroutine that called the op, and the first call of a goroutine it
//     started. The rest are background work (a keep-alive, a retried
//     delete, a timer's callback), a waiting loop on a goroutine of its own too.
//   - liveness: with every fault healed, no Lock or Unlock returns for a
//     minute of virtual time (or in 5000 moves), or one client's Unlock
//     fails 100 times in a row; the finding tells who waits, the lock's
//     nodes and the watches the server holds. Also: a locker's goroutine
//     that spins — 5000 calls on its Conn at one instant, without blocking
//     (calls the harness does not gate: SessionID, State, and every call
//     once the process has ended) — and a Lock or Unlock that still runs
//     long after the case is over, its ctx cancelled and its Conn closed.
//     The harness ends such a goroutine (runtime.Goexit) at its next call
//     on the Conn, so the case ends instead of hanging.
//   - leak: once every client has unlocked, the tree holds a node other
//     than the lock's directory and its ancestors, or the server a watch;
//     once every session is closed, such a node or a session remains; or,
//     once the case is over and every Conn closed, a goroutine of the
//     locker still calls its Conn after a minute's linger.
//   - unfenced-write: in cases that check fencing, the writes of a lock
//     that hands out tokens (a Fencer's writes carry its token, and the
//     resource refuses one older than the newest it accepted) are in no
//     order the lock and its tokens allow. A lock without tokens cannot
//     refuse a write from a holder whose session ended: a campaign on the
//     fake reports that once (Report.Tokenless; Check logs it), not as a
//     finding, and goes on looking for the lock's bugs.
//   - state-report: a lock that says where its hold stands (StateReporter)
//     says what its last call does not allow, or says Held while its
//     connection has been down for longer than its session timeout, when
//     the server may have expired the session and let the next holder in.
//
// # Counterexamples
//
// On a finding, rapid shrinks the case and Check fails the test with
// the finding's summary — one sentence naming the clients, the numbered
// steps and the fencing tokens involved — its story — the shrunk schedule
// told step by step, with what each client did and what the server did
// meanwhile — and the path of porcupine's HTML view of the history. rapid saves the case in a fail file
// under testdata/rapid/<test name>/, which every later `go test` replays
// first. GUIDs in node names are elided ("_c_…-") so the story of a lock
// that draws them at random is the same every time.
//
// # Any recipe
//
// The first path for a recipe of your own is a test: describe it as a
// [Recipe] and call Check(t, recipe) (fuzz/example_recipe_test.go is a
// whole one); cmd/zkfuzz, or a small main calling [Run], runs the same
// description for longer campaigns.
//
// A [Recipe] client's loop: at each move the schedule lets it make, the
// client asks its ops which are enabled now ([Op.Enabled]: a Resign only
// while leading), the move's draw picks one, and the call gets no
// deadline, a short one or a long one; the schedule may cancel a call that
// waits, crash the process in the middle of one, or close its Conn. The
// op records what it did for the model: [Call.Record] for an outcome
// known between the call and its return, [Call.RecordUnknown] for one that
// may come at any time after the call or never, [Call.Sessions] for what
// each session the client had during the call may have done (a call that
// waits may live through an expiry; a crash leaves every outcome open),
// and [Call.Fence] writes to the fenced resource the harness keeps. When
// the case winds down every client calls [Recipe.Stop] once and ends.
//
// The unknown-outcome rule: an operation whose outcome nobody learned (a
// create whose reply was lost, a call the process crashed in) is recorded
// with no output — RecordUnknown, or Record with a nil output — and
// porcupine places it at any instant after its call, the end of the
// history included, where it changes nothing: it took effect then, or
// never. A model's Step must therefore accept an input with a nil output
// whatever the state, applying its effect. Every other output is a claim
// the model holds the operation to; one that claims nothing but "it took
// effect" is any non-nil value (struct{}{}). The linearizability package
// has ready models built so: ElectionModel, RWMutexModel,
// SemaphoreModel, and for the recipes beyond them BarrierModel (a single
// use barrier or double barrier: arrive, pass, depart, left),
// QueueModel (a FIFO queue of distinct items), CounterModel and
// RegisterModel (a value that writes replace and reads return).
//
// What the model cannot see, the harness can read for it: [Recipe.Read]
// is a read of the recipe's shared state (a lease's data, a counter) that
// the harness makes itself, through a session no fault touches, after
// every step that changed the tree and once the case has settled, and
// records into the history in a row of its own; a stale write that
// overlapped the newer one, which porcupine may place first, is caught by
// the read after both. [Recipe.Final] checks the shared state once the case
// has settled (convergence): every item put and never taken is still in
// the queue, say.
//
// A call that can only return once other clients make calls of their own
// (a barrier's Enter, a queue consumer's Get) is an [Op] marked Joint: once
// the others have stopped, the wind-down cancels it rather than call the
// case stuck, and it must then return. Whether it should have returned
// before is the recipe's to say, in Recipe.Stalled.
//
// Each campaign chooses what it draws and what it reports:
// [WithoutFaults] leaves faults out (a bug that needs none is found
// faster without them), [WithoutDetectors] leaves out a rule that does not
// fit the recipe (the herd rule assumes a queue; a double barrier wakes
// every member by design) — its findings become notes in the story, and
// the case goes on — and [OnlyFindings] reports only the findings a
// campaign hunts, passing over the others as if their case were clean (a
// port of a library with several bugs, hunted for one).
//
// The detectors that apply to any recipe: model (porcupine checks the
// recorded history, with a linearizability.SessionExpiry for every
// session the server ended, against Recipe.Model: the porcupine.Model of
// [linearizability.ElectionModel], or one of your own); herd (a change
// wakes more than one client that has a node in the recipe's directory);
// polling (a client polls while it waits in a call); liveness (with every fault
// healed, no call returns for a minute, or a call spins, or one runs on
// after its Conn was closed); leak (nodes left in the tree once every
// client stopped, or sessions and watches once every session closed — a
// reader may leave the one watch it waits on armed until then, as
// go-zookeeper cannot remove a watch); state-report ([Recipe.Check]: what a
// handle says of itself contradicts its session, asked before each call);
// convergence ([Recipe.Settled]: once everything has settled, what a
// handle believes differs from what the server holds); and panic. The
// fencing, unfenced-write and lock-state checks are the lock loop's. A
// Recipe runs on the fake only, with the fake's own clients or with real
// go-zookeeper ones (see Real clients).
//
// fuzz/example_recipe_test.go is the whole test of a hand-written "whoever
// creates the node leads" election, written as a Recipe. It fails within a
// few cases: after a create whose reply was lost, or a campaign that
// failed just after its create, the next try finds the node it made itself
// and waits for it to go, for ever:
//
//	liveness: client 0's Campaign has not returned since step 16 … /first-to-create
//	holds /first-to-create/leader (ephemeral, owner 0x100007655d15c00)
//
// the owner being client 0's own session.
//
// A handle is made with a [Client]: its connection, the session's event
// channel as zk.Connect returns it (a handle that must know when its
// session is lost listens there, rather than polling State), and the
// client's number.
//
// In process, the Conn a client is given has two methods beyond
// *zk.Conn's, for code whose library, unlike go-zookeeper, counts the
// session timeout on its own clock and gives its session up when the
// connection has been down for that long, as Curator does:
// SessionTimeout() time.Duration, the timeout the server granted, and
// AbandonSession() bool, which gives the session up on the client's side
// alone: the Conn opens a new session while the server keeps the old one,
// and its ephemeral nodes, until it expires it, and the story tells it.
// Code asks its Conn for them (conn.(interface{ AbandonSession() bool }));
// over real clients they are not there. CURATOR-604 in the catalogue is
// found through them.
//
// # Real clients
//
// Code that takes a *zk.Conn itself, as go-zookeeper's zk.Lock and most Go
// programs do, is fuzzed unchanged: [LockZK] hands each client's code
// go-zookeeper's own *zk.Conn, and [WithRealClients] runs any target so
// ([Client.ZK] is the *zk.Conn). Each client is then a real go-zookeeper
// client talking to the served fake over in-memory pipes
// (wire.Pipe.NewClient): its reconnects, pings and setWatches are
// go-zookeeper's own, in virtual time. The gate moves to the server: a
// request waits there, having left the client, until the harness lets
// the server apply it (its pings are answered meanwhile). The faults act
// where a network and a process would put them, through wire.Client's
// words, which are the fake Conn's: a partition holds the bytes on the
// client's path both ways until it heals; a crash closes its connection
// and refuses its dials; lost requests and replies, expiries, lagging
// followers and stopped members are the server's, as in process.
//
//	go run ./cmd/zkfuzz -recipe=zk.Lock            # go-zookeeper's lock, unchanged
//	go run ./cmd/zkfuzz -recipe=election -real-clients
//
// What differs from the in-process path:
//   - A pause freezes the client's traffic and its code's requests, but
//     not go-zookeeper's own timers, which nothing outside it can stop: the
//     client notices its connection gone during the pause, not after.
//   - Late watch events are drawn for code written against zktest.Conn,
//     which gets [Client.Conn], whose watch channels the harness hands
//     over as in process. For code on the *zk.Conn itself they are not:
//     go-zookeeper hands an event to its channel at once, and when that
//     code reads the channel is not the harness's to hold; the herd and
//     poll detectors count an event that reached such a client as one its
//     code took; the poll detector counts background work's calls too.
//   - A process closes its Conn only while connected: between
//     connections, go-zookeeper's Close races its own reconnect loop.
//   - Replies to calls that waited out a cut reach the code as
//     go-zookeeper's receive loop hands them over, not one at a time in
//     an order drawn from the seed: the gate is at the server, which has
//     sent them by then.
//   - Of a client's calls that wait at the gate together, the one the
//     server read first goes first, not one drawn with the move: ZooKeeper
//     answers a session's requests in the order they were sent.
//   - A case is slower, about five times.
//
// The harness pins what go-zookeeper leaves to the scheduler: it waits
// for each new client's session before the next one dials; every dial but
// a client's first waits the client's ordinal in microseconds (clients cut
// off together would otherwise redial in the scheduler's order and take
// their session ids in it); a dial after a partition waits until what the
// client sent on the connection it gave up has reached the server, and
// that connection has closed there (its requests and the new handshake
// would otherwise arrive in the scheduler's order); the server applies a
// client's requests one grant at a time, and of those that wait together,
// the one it read first; and a process closes its Conn only while
// connected. So the same seed tells the same story, byte for byte, under
// -race too (TestRealClientsSameSeedSameStory compares the project's
// recipes, the mutants' queue lock and zk.Lock). Two of a client's
// goroutines that call at one instant still reach go-zookeeper in the
// scheduler's order, which the server then keeps, as ZooKeeper does: code
// that does so may tell its story otherwise from run to run. Code that
// reads the Conn's State right after a request failed with a lost connection
// races go-zookeeper's own connection goroutine, which moves from
// StateDisconnected to StateConnecting a moment later; the project's
// recipes read it after the pause that follows (recipe's closeEvidence),
// the mutants' queue lock a millisecond after, and code of yours should
// not read it at once either: it would take a lost connection for a
// closed Conn. A fail file's replay of a case whose code races so may not
// find its finding again; rapid says so, and the story it printed stands. Under -race the campaigns find no
// data race (go-zookeeper's own race on reconnect, go-zookeeper/zk#35, is
// kept from firing by the order in which the Pipe answers a reconnecting
// client; see wire.Pipe).
//
// go-zookeeper v1.0.4's zk.Lock (fuzz/targets.ZKLock), unchanged, shows
// three defects, each found within a few cases of its own campaign (its
// options leave out the draws that trip the others first), with every
// seed of five (TestZKLockDefects):
//   - zk.Lock/orphan (samuel/go-zookeeper #229): an error after the create
//     — a connection lost while Lock lists the directory — leaves the
//     node behind, alive with the session, and the client's next Lock
//     waits behind its own orphan for ever (liveness);
//   - zk.Lock/foreign-child: a child of the directory that zk.Lock did not
//     make fails every Lock with strconv's error, and its node stays (leak);
//   - zk.Lock/negative-sequence: past the int32 wrap or the sign change,
//     Lock looks for the node ahead among numbers above -1, finds none and
//     watches the directory's path with a trailing slash: zk.ErrInvalidPath,
//     and its node stays (leak; go-zookeeper/zk#65 fixed the parsing only).
//
// # The built-in recipes and the mutants
//
// The project's election, read/write lock and semaphore, and the mutants
// every campaign must find, are targets of package fuzz/targets, written
// against this package's exported API only, as a user writes a Recipe:
// its documentation describes each, with the mutant tables.
//
// # What the campaigns found
//
// recipe.Mutex, recipe.Election, recipe.RWMutex and recipe.Semaphore each
// survive 20,000 cases with no finding with each of seeds 1 to 5
// (`go run ./cmd/zkfuzz -recipe=NAME -cases=20000 -seed=N`, 2026-12-02: 15
// to 51s each, two campaigns sharing two cores). The same command finds,
// in every one of those five seeds, each of two old defects put back into
// today's recipe alone: the background deletion that gave up after a
// minute (liveness, after 67 to 8,321 cases) and an Unlock that took a
// deletion it heard of during the release for its own Delete's
// (mutual-exclusion, after 2,347 to 11,487 cases).
//
// Along the way the harness found real bugs in recipe.Mutex, each fixed: a
// watch left on its own node after an expiry; a node stuck first in the
// queue after a lost create reply; the background cleanup misjudging such
// a node after a session change; once clients drew every call, a TryLock
// that read a lagging follower and called a free lock taken, a pending
// release that a careless caller left in the queue for good, and the
// orphan reaper retrying a closed Conn for a minute; once the state-report
// detector checked it, an Unlock whose hold was lost while it waited
// reporting a pending release in state MutexLost; and once it drew outages
// of minutes and late watch events, a hold that stayed MutexHeld with its
// connection down while the watch on its node was being set again (the
// call blocked the goroutine that polls the connection), and a pending
// release ended as the Mutex's own when another session had deleted the
// node before Unlock began (the answer of the Delete it had given up on
// said "no node"). Since, make fuzz itself found, in recipe.RWMutex's
// read side (its model; 2 of 6 random seeds within 5,000 cases), an Unlock
// after the holder closed its Conn that reported a release no Delete made:
// go-zookeeper fails every request after Close at once with
// zk.ErrConnectionClosed, the very answer of a Delete lost when a
// connection drops, and the release took it for one that may have deleted
// the node. The first three are kept as fail files that every
// `go test` replays (cases now draw more, so those files replay other
// cases than the ones they were saved for).
//
// # Coverage
//
// `make fuzz-coverage` builds zkfuzz with coverage of package recipe, runs
// 3,000 cases of each of the four recipes (seed 1; FUZZ_COVERAGE_CASES changes
// it) and prints go tool cover -func's listing, then the statement coverage
// over every function and over the functions that matter — String methods and
// With... option setters left out, and named (cmd/covfigure). With
// `make fuzz`'s own 2,000 cases a recipe (FUZZ_COVERAGE_CASES=2000,
// 2026-12-04): 87.9% of recipe's statements over every function, 88.7% over
// the functions that matter (1,279 of 1,442); from seeds 2 and 3, 88.1% and
// 89.2% over every function. The harness as it was before it drew outages of
// minutes, late events and lagging new sessions reached 90.2% (1,259) of the
// same code: what the new faults bought is states (the defects above), not
// statements. The figure moves by a few statements from run to run, as the
// recipe's own selects pick at random among ready cases. What the campaigns
// miss is, for the most part, what no client does: bad input (an empty path, a
// node name with '/', a lock at '/', NewRWMutex's name checks), a ZooKeeper
// error other than a lost connection or an expiry in the middle of a create,
// two contenders with one sequence number (only hand-made names have that),
// races the harness does not draw (a request failing with zk.ErrClosing
// because Close came while it was on the wire), the RWMutex conveniences the
// harness reaches through ReadLock and WriteLock, and the semaphore's rarer
// retries. Every exported method of Mutex is reached, and recipe.Contenders (a
// client whose TryLock finds the lock taken asks who is ahead, [QueueReader]).
//
// # A real ensemble
//
// With [OnEnsemble] naming an ensemble (loopback
// addresses only), Check and Run run a lock's cases against it instead: real goroutine scheduling,
// real time, faults through the loopback proxy of package zkfake/zktest/ensemble
// (partitions, expiries, crashes). Nothing repeats there, so nothing is
// shrunk: cases draw their schedules from the campaign's seed and the first
// finding is reported as it happened. The history is what the clients saw,
// with each session expiry bounded by what its client saw of it (cut off at
// one instant, told of the expiry at a later one), and porcupine checks it
// with the same model. The detectors that need the fake's event log and
// watch counts — herd, and leaked watches — are left out; liveness and
// leaked nodes are checked.
//
// The package never switches modes on its own: it reads no environment
// variable, so a test's campaign, and the fail files it replays first, run
// on the fake in every CI job. cmd/zkfuzz takes the ensemble from
// ZK_SERVERS and passes it on; a test that wants one does the same (see
// ensemble.Servers). Under `make test-ensemble` only
// TestEnsembleFindsTimedWait asks for the ensemble.
//
// # Programs
//
// synctest needs a *testing.T, which only a test has. Run therefore runs
// the campaign as a test suite of one test, through the testing package's
// own entry point (testing.MainStart), in the calling process: the cases
// are the very cases Check runs, deterministic and in virtual time,
// with rapid's shrinking and fail files. The cost is that Run sets rapid's
// flags and redirects os.Stdout while it runs, and that MainStart is not
// covered by the Go 1 compatibility promise (a Go release that changes it
// breaks the build of this package, not its behaviour). Two alternatives
// were set aside: the fake's own manual clock (zkfake.WithManualClock) makes
// the server's time controllable, but not the time of the lock under test,
// whose timers run on the time package; and running `go test` from the
// command would need the Go toolchain at run time and could not run a
// NewLocker the caller passes in.
//
// # Many cores, many machines
//
// Run, and so zkfuzz, runs cases on every core ([WithWorkers], -workers;
// default GOMAXPROCS). Case k of a campaign is the case rapid.Check would
// run k-th from the campaign's seed (rapid seeds its i-th check with the
// seed plus 0+1+…+i), so it is the same case whichever worker runs it; the
// first failing case by index is the one reported and shrunk, and a
// campaign prints the same result with one worker or two (cmd/zkfuzz's
// TestCampaign checks it on a mutant, story and all). On a 2-core machine
// 4,000 cases of recipe.Mutex (seed 1) took 4.5s with one worker and 2.5s
// with two, 1.8×.
//
// -shard=K/N runs shard K of N: every N-th case index, from K-1. N jobs
// with the same -seed and -cases run the whole campaign once between them
// (TestShardsPartitionTheCampaign; TestShards checks that the whole
// campaign's first failing case is the first of its shards'), and a
// shard's finding prints the command that replays it, -shard included. A
// CI matrix, GitHub Actions for one:
//
//	jobs:
//	  fuzz:
//	    strategy:
//	      matrix:
//	        shard: [1, 2, 3, 4]
//	    runs-on: ubuntu-latest
//	    steps:
//	      - uses: actions/checkout@v4
//	      - uses: actions/setup-go@v5
//	        with: { go-version: '1.26' }
//	      - run: go run ./cmd/zkfuzz -recipe=election -cases=200000 -seed=${{ github.run_number }} -shard=${{ matrix.shard }}/4
//
// (GitLab's `parallel: 4` gives CI_NODE_INDEX and CI_NODE_TOTAL, which make
// -shard=$CI_NODE_INDEX/$CI_NODE_TOTAL.) A campaign stops when asked:
// interrupted, or its context done, it returns within a second with the
// cases run so far (TestStopsWhenAsked interrupts one of a billion cases).
//
// For long unattended runs, Go's own fuzzing engine takes the same cases as
// a fuzz target, [Fuzz] (rapid's MakeFuzz turns the fuzzer's bytes into the
// case's draws), with its own parallel workers:
//
//	go test ./fuzz -run '^$' -fuzz FuzzRecipeMutex -fuzztime 10m   # -parallel N: how many at once
//
// Coverage-guided mutation of rapid's bytes finds bugs far more slowly than
// the campaign's own draws; it is there for hours, not minutes.
//
// # The module's layers
//
// Each package of the module may import only the layers below it;
// TestLayers (layers_test.go) runs go list and fails on any other
// dependency, on a product package that links testing, and on a package
// that has no rule yet. Tests are not counted.
//
//	layer            packages                                          may import (of this module)
//	products         zkfake, recipe, linearizability                   nothing; none links testing
//	the codec        zkfake/jute                                       nothing (no testing)
//	the fake served  zkfake/wire, cmd/zkfake-server                    zkfake and jute (no testing)
//	the suite        zkfake/zktest                                     jute only
//	its targets      zkfake/zktest/fake; zkfake/zktest/ensemble        zkfake, zktest and jute; zktest and jute
//	harnesses        zkfake/difftest, linearizability/fakelog,         the layers above as each needs
//	                 zkfake/zkbench, fuzz                              (only zkbench and fuzz use recipe)
//	built-in targets fuzz/targets                                      fuzz's exported API, and what fuzz may
//	test support     fuzz/internal/pinned (tests' TestMain)            nothing of this module
//	commands         cmd/zkfuzz, cmd/zkbench, cmd/zkrecord,            what they run
//	                 cmd/covfigure
//
// Inside package fuzz the files are layers too, bottom to top: the API a
// user writes against (fuzz.go, options.go, locker.go, recipe.go,
// stepdown.go, names.go; RecipeMutex, which reaches into the case for its
// client's name and listener, lives with the lock loop in
// recipemutex.go); one case in its bubble (its data in harness.go, the rest
// in files named for what they do); reading a case once it has run
// (history.go, explain.go, model.go); and the campaigns that run cases by
// the thousand (engine.go, campaign.go, shim.go, program.go, real.go,
// check.go). TestFileLayers (filelayers_test.go) type-checks the package
// with go/types and fails on any use of a type, function, method or field
// declared in a layer above the file that uses it.
//
// The fake and the recipes know nothing of each other: recipe.Conn is the
// ten *zk.Conn methods the recipes call, which any connection has, and the
// fake is checked against the whole *zk.Conn method set by its own test.
// The set the suite checks, zktest.Conn, lives with the suite, as fs.FS
// beside testing/fstest's checker: the implementations are handed to the
// suite, not the other way round, so a program that imports zkfake links
// neither testing nor the suite (fake.NewTarget is to zkfake what
// net/http/httptest is to net/http).
//
// Faults have one vocabulary: the optional interfaces of zktest (Expirer,
// Partitioner, Crasher, Members, Reconnector, ReplyLoser) return errors, so
// a client's own goroutine may inject them; an error wrapping
// errors.ErrUnsupported means the target cannot do it here, and
// zktest.Require skips the test then. The fake's fake.Env and fake.Faults,
// the ensemble's ensemble.Env, the linearizability recorder
// (fakelog.Config.Faults) and this harness's real-ensemble mode all use
// them; in fake mode the harness calls the fake's own methods, for the
// faults no real ensemble offers (pauses, lost requests, lagging members).
// Anything that watches or steers a connection's traffic is a zktest.Wrap
// with hooks: CountingConn counts with it, this harness gates requests on it.
//
// Where new work goes:
//   - A recipe: files in recipe/ on recipe.Conn alone (add the *zk.Conn
//     method it needs to that interface); its porcupine model in
//     linearizability/; its scenarios as zktest.Scenarios in recipe's
//     tests, run with zktest.RunScenarios on fake.NewTarget() and on
//     ensemble.NewTarget(...); its mutants in fuzz/targets.
//   - A fault: the model in zkfake (the pure decision in the core, the
//     timing in the shell, a method on Server or Conn); an optional
//     interface in zkfake/zktest/target.go, implemented by fake.Faults and,
//     where a real ensemble can do it, ensemble.Env.
//   - A ZooKeeper behaviour: a scenario in
//     zkfake/zktest/scenario_<area>.go, listed in the package
//     documentation; it then runs on the fake, over the wire and on the
//     ensemble. For a request go-zookeeper cannot send, the scenario speaks
//     the protocol itself (zktest's raw client, on zkfake/jute) over a
//     connection from an Env that implements zktest.RawDialer — the wire's
//     targets and the ensemble's — and the in-process fake's Conn gets an
//     extra method, tested in zkfake.
//
// What changed for users when the module took this layout:
// zkfake.NewTarget and zkfake.ServerOf are fake.NewTarget and
// fake.ServerOf (zkfake/zktest/fake); zkfake/ensemble is
// zkfake/zktest/ensemble; recipe.Conn is smaller (a *zk.Conn or
// *zkfake.Conn passes as before; code that used it as the whole method set
// takes zktest.Conn, or better an interface of its own); a NewLocker takes
// a zktest.Conn; the fault methods of an Env return an error instead of
// taking a testing.TB; fakelog.ServerFaults is fake.Faults;
// wire.WithTickTime is gone (the listener takes the server's).
package fuzz
