package fuzz

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"
	"strings"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/wire"
	"pgregory.net/rapid"
)

// This file runs one case: draws its shape (clients, tickTime, session
// timeouts, members, the sequence counter), makes its server and clients,
// and lets time pass between steps.

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

// runCase draws and runs one case in the current bubble.
func runCase(t *rapid.T, sub *subject, cfg config, lagFromStart bool) *caseResult {
	clients := rapid.IntRange(minClients, cfg.Clients).Draw(t, "clients")
	// A Recipe's ops fence their writes themselves (Call.Fence).
	fencing := cfg.Fencing == FencingAlways && sub.isLock()
	if cfg.Fencing == FencingDrawn && sub.isLock() {
		fencing = rapid.Bool().Draw(t, "fencing")
	}
	seed := rapid.Uint64().Draw(t, "server seed")
	// A case runs on one server or on an ensemble of three, whose two
	// followers can lag.
	members := 1
	if rapid.Bool().Draw(t, "ensemble of three") || lagFromStart {
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
	if near := rapid.IntRange(0, 3).Draw(t, "sequence counter near"); near > 0 && !cfg.NoSequenceWrap {
		k := int32(rapid.IntRange(0, 6).Draw(t, "creates before the change"))
		sequence = [...]int32{0, math.MaxInt32 - k, -1000000000 - k, -1 - k}[near]
	}
	// rapid draws a slice's length with a small mean; the schedule's length
	// is drawn on its own so that long schedules are common too.
	n := rapid.IntRange(1, cfg.Steps).Draw(t, "steps")
	schedule := rapid.SliceOfN(actionGen(clients, cfg), n, n).Draw(t, "schedule")

	h := &harness{
		sub:      sub,
		t:        t,
		srv:      zkfake.NewServer(zkfake.WithSeed(seed), zkfake.WithTickTime(tick), zkfake.WithEnsemble(members), zkfake.WithShuffledChildren(), zkfake.WithSequenceStart(sequence)),
		dir:      sub.path,
		members:  members,
		seed:     seed,
		heldCame: make(chan struct{}, 1),
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
		leftOut:  cfg.NoDetectors,
	}
	realClients := cfg.RealClients || sub.realOnly
	where := "a server"
	if members > 1 {
		where = fmt.Sprintf("an ensemble of %d (sessions go to its members in turn)", members)
	}
	loop := fmt.Sprintf("Lock, critical section%s, Unlock", map[bool]string{true: " (writing to a fenced resource)", false: ""}[fencing])
	if !sub.isLock() {
		loop = sub.describeLoop()
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
	kind := "clients"
	if realClients {
		kind = "go-zookeeper clients"
	}
	h.begin(fmt.Sprintf("%d %s start on %s (tickTime %v), each with a session of its own (timeouts %s), and loop: %s", clients, kind, where, tick, h.describeTimeouts(), loop))
	if sequence != 0 {
		h.note("every directory's sequence counter starts at %d", sequence)
	}
	// The lock's directory may hold children that are no contenders:
	// names without a sequence number, one whose ten digits are no int32,
	// so no sequence number ZooKeeper makes, and names like a lock's
	// protected nodes (go-zookeeper's "_c_<guid>-", kazoo's "__lock__")
	// ending in no number ZooKeeper makes. A Recipe's directory holds its
	// own nodes only: what a foreign child means is the recipe's call.
	if foreign := sub.isLock() && rapid.Bool().Draw(t, "foreign children") && !cfg.NoForeignChildren; foreign {
		if foreign {
			lookalike := lockPath + "/_c_" + strings.Repeat("0", 32) + "-__lock__"
			h.foreign = []string{lockPath + "/readme", lockPath + "/leader.json", lockPath + "/snapshot-9999999999",
				lookalike + "backup", lookalike + "9999999999", lookalike + "12345abcde"}
		}
		h.prepareDirectory()
	}
	// The Pipe's goroutines start after the last draw: a draw rapid
	// refuses (a fail file of an older version, whose choices run out)
	// ends the case at once, and synctest fails a bubble left with
	// goroutines.
	if realClients {
		h.pipe = wire.ServePipe(h.srv)
	}
	if lagFromStart {
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
		h.probe(false)
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
		slot:     s,
		n:        s.incs,
		ctx:      ctx,
		cancel:   cancel,
		done:     make(chan struct{}),
		killed:   make(chan struct{}),
		row:      len(h.incs),
		fencing:  h.fencing,
		heldCame: h.heldCame,
	}
	link, conn, err := h.connect(inc)
	if err != nil {
		panic(fmt.Sprintf("zkfuzz: connecting %s to the fake server: %v", s.name(), err))
	}
	inc.conn, inc.user = link, conn
	s.inc = inc
	s.phase, s.inCS, s.polls, s.lastOK, s.call = phaseIdle, false, 0, false, ""
	h.incs = append(h.incs, inc)
	h.noteSession(inc)
	if h.sub.isLock() {
		go inc.run(h.sub.newLocker)
	} else {
		go inc.runOps(h.sub)
	}
}

// handOverInRounds hands over, in rounds, what next hands over to each
// client (one thing each, or nothing), letting what it wakes run until the
// bubble is quiet after each round, until a round hands over nothing.
func (h *harness) handOverInRounds(next func(*incarnation) bool) {
	for handed := true; handed; {
		handed = false
		for _, inc := range h.incs {
			if next(inc) {
				handed = true
			}
		}
		if handed {
			synctest.Wait()
		}
	}
}

// handOverHeld hands over what waits for the harness: replies that came
// after their step, and watch events fired together, reach each locker one
// at a time, the replies first, in an order drawn from the case's seed
// (replies.go), then the events, in key order (gate.go); a watch event
// drawn late is held back (late.go).
func (h *harness) handOverHeld() {
	h.handOverInRounds(func(inc *incarnation) bool {
		h.holdLate(inc)
		return inc.handOverReply() || inc.handOver()
	})
}

// settle waits until every goroutine of the bubble is durably blocked, then
// takes in what the clients did meanwhile.
func (h *harness) settle() {
	synctest.Wait()
	h.handOverHeld()
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
	if h.leftOut[d] {
		// The detector is left out (WithoutDetectors): the case goes on,
		// looking for the rest; the story notes the first such finding.
		if !h.leftOutNoted[d] {
			if h.leftOutNoted == nil {
				h.leftOutNoted = map[Detector]bool{}
			}
			h.leftOutNoted[d] = true
			h.note("· (%s, left out: %s)", d, StableName(fmt.Sprintf(format, args...)))
		}
		return
	}
	h.finding = &Finding{Detector: d, Summary: StableName(fmt.Sprintf(format, args...))}
	h.note("✗ %s: %s", d, h.finding.Summary)
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
	if h.pipe != nil {
		h.pipe.Close()
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

// The case's rhythm and bounds.
const (
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
	// jointWait is how long the wind-down lets the clients' joint calls
	// (Op.Joint) wait, with nothing moving, before it cancels them.
	jointWait = 10 * time.Second
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

// notePanic, deferred by a client's loop, keeps a panic of the code under
// test (with its stack) for the Panic detector, and ends the loop quietly.
func (inc *incarnation) notePanic() {
	if r := recover(); r != nil {
		inc.mu.Lock()
		inc.panicked, inc.stack = fmt.Sprint(r), string(debug.Stack())
		inc.mu.Unlock()
	}
}
