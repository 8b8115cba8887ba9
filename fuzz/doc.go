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
//   - [Election], the leader election described as such a Recipe, with
//     [RecipeElection] for recipe.Election;
//   - [Lock], a lock: any [Locker] — Lock(ctx) and Unlock() — made by a
//     [NewLocker] on the zktest.Conn each simulated client passes it; a
//     lock that hands out fencing tokens also implements [Fencer].
//     [CheckMutex] is Check of a Lock.
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
// The schedule is a list of actions rapid draws and shrinks: a client's
// next move; a move whose request is lost before the server applies it, or
// whose reply is lost after; a partition and its healing; a session expiry;
// a crash, after which a new process takes the client's place; a process
// frozen past its session timeout (a long GC pause) and thawed; a follower
// that starts lagging, so that its sessions read stale data and hear their
// watches late, and catches up; an expiry after which the client's next
// session opens on a lagging follower; a majority of the ensemble stopped
// (no quorum: nothing is served, no session expires) and started again at
// once or minutes later; a watch event held back from the recipe until the
// reply to the client's next request, as go-zookeeper's event channels
// allow; time passing. Every directory's sequence counter may start near
// the int32 wrap (zkfake.WithSequenceStart). Each case then winds down:
// every fault heals, every client finishes its round and stops, every
// session closes.
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
//     the change of its zxid, or else to the last change to its path; or a
//     waiting client polls: three calls in a row, each after sleeping,
//     with nothing changed.
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
//   - unfenced-write: in cases that check fencing, a holder whose session
//     had expired wrote to the protected resource and nothing refused it
//     (a Fencer's writes carry its token, and the resource refuses one
//     older than the newest it accepted).
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
// The detectors that apply to any recipe: model (porcupine checks the
// recorded history, with a linearizability.SessionExpiry for every
// session the server ended, against Recipe.Model: the porcupine.Model of
// [linearizability.ElectionModel], or one of your own); herd (a change
// wakes more than one client that has a node in the recipe's directory,
// or a client polls while it waits in a call); liveness (with every fault
// healed, no call returns for a minute, or a call spins, or one runs on
// after its Conn was closed); leak (nodes left in the tree once every
// client stopped, or sessions and watches once every session closed — a
// reader may leave the one watch it waits on armed until then, as
// go-zookeeper cannot remove a watch); state-report ([Recipe.Check]: what a
// handle says of itself contradicts its session, asked before each call);
// convergence ([Recipe.Settled]: once everything has settled, what a
// handle believes differs from what the server holds); and panic. The
// fencing, unfenced-write and lock-state checks are the lock loop's. A
// Recipe runs on the fake only.
//
// # A real ensemble
//
// With Config.Servers (the OnEnsemble option) naming an ensemble (loopback
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
// ensemble.Servers).
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
package fuzz
