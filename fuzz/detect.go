package fuzz

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake"
)

// writeOps are the server's names of the requests that change the tree.
var writeOps = map[string]bool{
	"create": true, "createContainer": true, "createTTL": true, "delete": true,
	"setData": true, "setACL": true, "multi": true, "reap": true,
}

// herdDetector reads the server's log for changes that woke more than one
// waiter. Each watch event the server delivered is put down to the change
// that fired it, and the detector counts, per change and path, the waiters
// it woke. Most events follow their change at once and carry its zxid;
// some come late and must still be counted: a lagging follower delivers
// them, with the change's zxid, when it catches up, and a client that
// reconnects hears at once of every watched node that changed since the
// last zxid it saw (setWatches), with the server's zxid of the moment. So
// an event is put down to the change of its zxid if that change touched
// its path, and otherwise to the last change that did.
//
// The session that made the change does not count, nor the owner of a node
// hearing of its own node: only other sessions, which are waiting for the
// lock, and among them only those whose locker took the event (see
// gatedConn.forward).
type herdDetector struct {
	h       *harness
	changes map[int64]*change  // zxid → the change that took it
	touched map[string]*change // path → the last change to the node, or (key+"/") to its children
	owner   map[string]int64   // lock node → the session that created it
	nodes   map[int64]int      // session → how many lock nodes it has
	eph     map[string]int64   // ephemeral node → its owner
}

// change is one write or session end, and the waiters it woke.
type change struct {
	rec   zkfake.Record
	step  int                // the story's number for the step it happened in
	paths map[string]bool    // what it touched: nodes, and parents (path+"/") whose children changed
	woken map[string][]waker // path → the waiters it woke there
	herd  bool               // found a herd already (a Recipe's rule)
	// freedHead: it deleted the first node in the recipe's queue, the
	// one that holds (a release, a holder's crash or expiry), or a node
	// its client deleted in a call that releases (Op.Releases).
	freedHead bool
}

// waker is one waiter a change woke.
type waker struct {
	session int64
	step    int  // the step the event reached it in
	late    bool // after the change's own instant
}

func newHerdDetector(h *harness) *herdDetector {
	return &herdDetector{h: h, changes: map[int64]*change{}, touched: map[string]*change{},
		owner: map[string]int64{}, nodes: map[int64]int{}, eph: map[string]int64{}}
}

// forget drops a deleted node from the books.
func (d *herdDetector) forget(path string) {
	delete(d.eph, path)
	if s, ok := d.owner[path]; ok {
		delete(d.owner, path)
		d.nodes[s]--
	}
}

// releasing reports whether session's client was in a call that releases
// (Op.Releases) in story step step (numbered from 1).
func (d *herdDetector) releasing(session int64, step int) bool {
	if d.h.e == nil {
		return false
	}
	for _, span := range d.h.releases[session] {
		if span[0] <= step-1 && (span[1] < 0 || step-1 <= span[1]) {
			return true
		}
	}
	return false
}

// head returns the first node in the recipe's queue: of the nodes in its
// directory, the one a Mutex would put first (recipe.QueueOrder); "" if
// none ends in a sequence number.
func (d *herdDetector) head() string {
	if queue := recipe.QueueOrder(slices.Collect(maps.Keys(d.owner))); len(queue) > 0 {
		return queue[0]
	}
	return ""
}

// parentOf returns the key under which changes to path's parent's
// children are filed.
func parentOf(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "//"
	}
	return path[:i] + "/"
}

// touch files c as the last change to path (a node, or with a trailing
// slash a node's children).
func (d *herdDetector) touch(c *change, path string) {
	c.paths[path] = true
	d.touched[path] = c
}

// ephemeral reports whether a create's input asked for an ephemeral node.
func ephemeral(input string) bool {
	var flags int32
	if _, err := fmt.Sscanf(input, "flags=%d", &flags); err != nil {
		return false
	}
	return flags&zk.FlagEphemeral != 0
}

// observe takes the next record of the log, filed in story step step (its
// number), and returns a description of a herd if this record completes
// one.
func (d *herdDetector) observe(r zkfake.Record, step int) string {
	switch r.Kind {
	case zkfake.RecordOp:
		if !writeOps[r.Op] || r.Err != nil {
			return ""
		}
		c := d.begin(r, step)
		switch r.Op {
		case "create", "createContainer", "createTTL":
			d.touch(c, r.Result)
			d.touch(c, parentOf(r.Result))
			if ephemeral(r.Input) {
				d.eph[r.Result] = r.Session
			}
			if ephemeral(r.Input) && strings.HasPrefix(r.Result, d.h.dir+"/") {
				d.owner[r.Result] = r.Session
				d.nodes[r.Session]++
			}
		case "delete", "reap":
			d.touch(c, r.Path)
			d.touch(c, parentOf(r.Path))
			c.freedHead = r.Path == d.head() || d.releasing(r.Session, step)
			d.forget(r.Path)
		case "setData", "setACL":
			d.touch(c, r.Path)
		default:
			// A multi: its parts are not in the log; only the events that
			// carry its zxid are put down to it.
			c.paths = nil
		}
	case zkfake.RecordSession:
		if r.Op != "expireSession" && r.Op != "closeSession" {
			return ""
		}
		c := d.begin(r, step)
		var gone []string
		for path, s := range d.eph {
			if s == r.Session {
				gone = append(gone, path)
			}
		}
		sort.Strings(gone)
		head := d.head()
		for _, path := range gone {
			c.freedHead = c.freedHead || path == head
			d.touch(c, path)
			d.touch(c, parentOf(path))
			d.forget(path)
		}
	case zkfake.RecordWatch:
		return d.wake(r, step)
	}
	return ""
}

// begin files a change.
func (d *herdDetector) begin(r zkfake.Record, step int) *change {
	c := &change{rec: r, step: step, paths: map[string]bool{}, woken: map[string][]waker{}}
	d.changes[r.Zxid] = c
	return c
}

// cause returns the change that fired watch event r.
func (d *herdDetector) cause(r zkfake.Record) *change {
	key := r.Path
	if r.Op == zk.EventNodeChildrenChanged.String() {
		key = r.Path + "/"
	}
	if c := d.changes[r.Zxid]; c != nil && (c.paths == nil || c.paths[key]) {
		return c
	}
	return d.touched[key]
}

// wake counts a delivered watch event against its change.
func (d *herdDetector) wake(r zkfake.Record, step int) string {
	c := d.cause(r)
	// Only a waiter counts: a session with a node in the queue, whose
	// locker took the event.
	if c == nil || r.Session == c.rec.Session || d.owner[r.Path] == r.Session ||
		d.nodes[r.Session] == 0 || !d.h.taken[delivery{session: r.Session, path: r.Path, at: r.Time}] {
		return ""
	}
	woken := c.woken[r.Path]
	for _, w := range woken {
		if w.session == r.Session {
			return ""
		}
	}
	woken = append(woken, waker{session: r.Session, step: step, late: r.Time.After(c.rec.Time)})
	c.woken[r.Path] = woken
	if d.h.e != nil && !d.h.e.sub.isLock() {
		return d.wokeInVain(c, woken, r)
	}
	if len(woken) != 2 {
		return ""
	}
	return fmt.Sprintf("%s at step %d woke %s and %s (%s %s): a waiter should wait for one node, the one just ahead of it",
		d.describe(c), c.step, d.describeWaker(woken[0]), d.describeWaker(woken[1]), strings.TrimPrefix(r.Op, "Event"), r.Path)
}

// wokeInVain is the herd rule for a Recipe, whose one change may wake
// several waiters rightly (a writer's release, every reader behind it): a
// herd is a release — a change that deleted the first node in the queue,
// or a node deleted in a call that releases — that woke two or more waiters, one of which it did not unblock: that
// waiter set a watch again before its call returned. It is reported once,
// when the change has woken its second waiter and one of those so far
// went back to waiting. Other changes may rightly wake waiters in vain: a
// waiting writer that gives up wakes the readers behind it, though a
// writer ahead of it still blocks them, and a write to a node's data
// unblocks nobody.
func (d *herdDetector) wokeInVain(c *change, woken []waker, r zkfake.Record) string {
	if len(woken) < 2 || c.herd || !c.freedHead {
		return ""
	}
	for _, w := range woken {
		if !d.h.wokenInVain(w.session, w.step-1) {
			continue
		}
		c.herd = true
		others := make([]string, 0, len(woken)-1)
		for _, o := range woken {
			if o.session != w.session {
				others = append(others, d.describeWaker(o))
			}
		}
		return fmt.Sprintf("%s at step %d woke %s and %s (%s %s), and %s went back to waiting: a waiter should wait for the node whose going unblocks it",
			d.describe(c), c.step, d.describeWaker(w), strings.Join(others, " and "), strings.TrimPrefix(r.Op, "Event"), r.Path, d.h.client(w.session))
	}
	return ""
}

func (d *herdDetector) describeWaker(w waker) string {
	if w.late {
		return fmt.Sprintf("%s (late, at step %d)", d.h.client(w.session), w.step)
	}
	return d.h.client(w.session)
}

func (d *herdDetector) describe(c *change) string {
	t := c.rec
	switch t.Op {
	case "expireSession":
		return fmt.Sprintf("the expiry of %s's session %#x", d.h.client(t.Session), t.Session)
	case "closeSession":
		return fmt.Sprintf("the close of %s's session %#x", d.h.client(t.Session), t.Session)
	}
	return fmt.Sprintf("%s's %s %s", d.h.client(t.Session), t.Op, t.Path)
}

// node is a znode as Dump shows it.
type node struct {
	path  string
	owner string // the ephemeral owner, "" for a persistent node
}

// tree reads the server's tree from Dump.
func (h *harness) tree() []node {
	var nodes []node
	for _, line := range strings.Split(strings.TrimSpace(h.srv.Dump()), "\n") {
		i := strings.Index(line, " data=")
		if i < 0 {
			continue
		}
		n := node{path: line[:i]}
		if j := strings.Index(line, " owner="); j >= 0 {
			n.owner = line[j+len(" owner="):]
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// leftovers lists the nodes a case may not leave behind: everything but the
// tree a new server holds and the lock's directory with its ancestors.
func (h *harness) leftovers() []node {
	allowed := map[string]bool{"/": true, "/zookeeper": true, "/zookeeper/quota": true, "/zookeeper/config": true}
	for _, p := range ancestry(h.dir) {
		allowed[p] = true
	}
	for _, p := range h.foreign {
		allowed[p] = true
	}
	var left []node
	for _, n := range h.tree() {
		// A Recipe may keep the directories it makes (a semaphore's
		// lock's, beside its own); its ephemeral nodes must all go.
		kept := !h.e.sub.isLock() && n.owner == "" && strings.HasPrefix(n.path, h.dir+"/")
		if !allowed[n.path] && !kept {
			left = append(left, n)
		}
	}
	return left
}

// describeNodes lists nodes, GUIDs elided, in an order that does not
// depend on the GUIDs: rapid compares the summaries of two runs of a case.
func describeNodes(nodes []node) string {
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = StableName(n.path)
		if n.owner != "" {
			parts[i] += " (ephemeral, owner " + n.owner + ")"
		}
	}
	sort.Strings(parts)
	return abbreviated(parts, ", ")
}

// watchedPaths describes where the server holds watches, among the paths
// the case has used.
func (h *harness) watchedPaths() string {
	paths := map[string]bool{h.dir: true}
	for _, n := range h.tree() {
		paths[n.path] = true
	}
	for _, r := range h.srv.Log() {
		if r.Path != "" {
			paths[r.Path] = true
		}
	}
	var list []string
	for p := range paths {
		if n := h.srv.WatchCount(p); n > 0 {
			list = append(list, fmt.Sprintf("%s (%d)", StableName(p), n))
		}
	}
	sort.Strings(list)
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

// windDown heals every fault, tells the clients to stop after their current
// round, and lets them finish, round robin. If nothing moves for
// its stallLimit — no Lock or Unlock returns — the case is stuck: liveness.
func (h *harness) windDown() {
	h.closeAdmin()
	for _, s := range h.slots {
		h.tick()
		switch {
		case s.inc.partitioned:
			h.heal(s, healNow)
		case s.inc.paused:
			h.resume(s, resumeNow)
		}
	}
	if len(h.stopped) > 0 {
		h.tick()
		h.restartMembers(0)
	}
	for _, s := range h.slots {
		s.inc.mu.Lock()
		s.inc.lateNext = false
		s.inc.mu.Unlock()
	}
	for member := 1; member < h.members; member++ {
		if h.lagging[member] {
			h.tick()
			h.begin(fmt.Sprintf("follower %d catches up", member))
			h.srv.SetLagging(member, false)
			h.lagging[member] = false
			h.settle()
		}
	}
	h.tick()
	round := "finishes its round, unlocks and stops"
	if !h.e.sub.isLock() {
		round = "finishes its call, calls Stop if the recipe has one, and stops"
	}
	h.begin("wind-down: every fault is healed; each client " + round)
	h.stopping = true
	lastProgress, moves := h.now(), 0
	wait := 100 * time.Millisecond
	next := 0
	// failedUnlocks counts each client's Unlock calls that failed in a
	// row; they are not progress, but neither do they let time pass, and
	// the client loop gives up on them only after unlockAttempts.
	failedUnlocks := map[*slot]int{}
	for h.finding == nil {
		h.tick()
		if h.allExited() {
			return
		}
		if stalled := h.now() - lastProgress; stalled >= h.stallLimit() || moves >= stallMoves {
			what := "took or released the lock"
			if !h.e.sub.isLock() {
				what = "finished a call"
			}
			h.begin(fmt.Sprintf("the clients have made %d moves in %v and none of them %s", moves, stalled.Round(time.Millisecond), what))
			h.stuck(stalled, moves)
			return
		}
		s, r := h.runnable(h.slots[next%len(h.slots)])
		if s != nil && r.point == pointUnlocked {
			if r.err == nil || releaseSettled(r.err) {
				delete(failedUnlocks, s)
			} else if failedUnlocks[s]++; failedUnlocks[s] >= windDownUnlockFailures {
				h.begin(fmt.Sprintf("%s's Unlock has failed %d times in a row", s.name(), failedUnlocks[s]))
				h.found(Liveness, "%s's Unlock did not release: with every fault healed it failed %d times in a row, the last with: %v",
					s.name(), failedUnlocks[s], r.err)
				return
			}
		}
		if s != nil {
			next = s.id + 1
			wait = 100 * time.Millisecond
			h.begin(fmt.Sprintf("%s moves", s.name()))
			moves++
			// Progress is a Lock or an Unlock that returned for good, or a
			// client that stops; an Unlock that fails and is retried is
			// not.
			if r.point == pointLock || r.point == pointOp || r.point == pointOpReturned ||
				(r.point == pointLocked || r.point == pointUnlocked) && (r.err == nil || releaseSettled(r.err)) {
				lastProgress, moves = h.now(), 0
			}
			h.grant(s, r)
			h.checkRecipe()
			continue
		}
		if h.releaseIdleLate() {
			continue
		}
		h.begin(fmt.Sprintf("no client can move; time passes %v", wait))
		h.cur.quiet = true
		h.advance(wait)
		wait = min(2*wait, 5*time.Second)
	}
}

func (h *harness) allExited() bool {
	for _, s := range h.slots {
		if !s.inc.exited {
			return false
		}
	}
	return true
}

// stuck reports the liveness finding: who waits, and what the server holds
// that could (or could not) wake them.
func (h *harness) stuck(stalled time.Duration, moves int) {
	if !h.e.sub.isLock() {
		h.stuckOps(stalled, moves)
		return
	}
	var waiting []string
	for _, s := range h.slots {
		switch s.phase {
		case phaseLocking:
			waiting = append(waiting, fmt.Sprintf("%s's Lock has not returned since step %d", s.name(), h.instantStep(s.acquireCall)))
		case phaseUnlocking:
			waiting = append(waiting, fmt.Sprintf("%s's Unlock has not returned since step %d", s.name(), h.instantStep(s.releaseCall)))
		}
	}
	who := "no client is in Lock or Unlock"
	if len(waiting) > 0 {
		who = strings.Join(waiting, ", ")
	}
	children := h.children()
	lock := "the lock is free: " + lockPath + " has no contender"
	if len(children) > 0 {
		lock = lockPath + " holds " + describeNodes(children)
	}
	h.found(Liveness, "%s: with every fault healed, no Lock or Unlock returned in %v and %d moves; %s; watches on the server: %s",
		who, stalled.Round(time.Millisecond), moves, lock, h.watchedPaths())
}

// stuckOps is stuck for a Recipe.
func (h *harness) stuckOps(stalled time.Duration, moves int) {
	var waiting []string
	for _, s := range h.slots {
		if s.call != "" {
			waiting = append(waiting, fmt.Sprintf("%s's %s has not returned since step %d", s.name(), s.call, h.instantStep(s.acquireCall)))
		}
	}
	who := "no client is in a call"
	if len(waiting) > 0 {
		who = strings.Join(waiting, ", ")
	}
	nodes := h.dir + " holds nothing"
	if children := h.children(); len(children) > 0 {
		nodes = h.dir + " holds " + describeNodes(children)
	}
	h.found(Liveness, "%s: with every fault healed, no call returned in %v and %d moves; %s; watches on the server: %s",
		who, stalled.Round(time.Millisecond), moves, nodes, h.watchedPaths())
}

// children returns the nodes under the lock's directory.
func (h *harness) children() []node {
	var out []node
	for _, n := range h.tree() {
		if strings.HasPrefix(n.path, h.dir+"/") {
			out = append(out, n)
		}
	}
	return out
}

// background lets d of time pass once every client has stopped, granting
// the requests a locker's own goroutines still make meanwhile — a
// background deletion of a node it could not delete before, say — as they
// would go out unhindered in a real process. A locker that keeps calling
// for ever is the leash's business (see leash).
func (h *harness) background(d time.Duration) {
	// In steps of 50ms, or of a 160th of d for the minutes a case of long
	// sessions waits: a request made meanwhile waits a step at most.
	pause := max(50*time.Millisecond, d/160)
	for waited, moves := time.Duration(0), 0; waited < d && moves < stallMoves; {
		if s, r := h.runnable(h.slots[0]); s != nil && r.point == noPoint {
			moves++
			h.grant(s, r)
			continue
		}
		if h.releaseIdleLate() {
			continue
		}
		step := min(pause, d-waited)
		h.advance(step)
		waited += step
	}
}

// finalChecks runs once every client has stopped: after the sessions of
// crashed processes have expired, the lock's directory must be empty and the
// server must hold no watch; after every client closes its session, nothing
// may remain at all.
func (h *harness) finalChecks() {
	h.tick()
	h.begin("every client has unlocked and stopped; time passes for the sessions of crashed processes to expire")
	h.background(2 * h.maxTimeout)
	h.checkSettled()
	h.closeReader()
	if h.finding != nil {
		return
	}
	if left := h.leftovers(); len(left) > 0 {
		h.found(Leak, "once every client had %s, the tree still holds %s", map[bool]string{true: "unlocked", false: "stopped"}[h.e.sub.isLock()], describeNodes(left))
		return
	}
	// A Recipe's reader may leave the watch it waits on armed when it
	// stops (go-zookeeper v1.0.4 cannot remove a watch), until the node
	// changes or the session closes: only a lock must leave none.
	if n := h.srv.TotalWatches(); n > 0 && h.e.sub.isLock() {
		h.found(Leak, "once every client had unlocked, the server still holds %d watch%s: %s", n, map[bool]string{true: "", false: "es"}[n == 1], h.watchedPaths())
		return
	}
	h.tick()
	h.begin("every client closes its session")
	for _, s := range h.slots {
		s.inc.conn.Close()
	}
	h.settle()
	h.advance(2 * h.maxTimeout)
	if left := h.leftovers(); len(left) > 0 {
		h.found(Leak, "once every session was closed, the tree still holds %s", describeNodes(left))
		return
	}
	if ids := h.srv.Sessions(); len(ids) > 0 {
		h.found(Leak, "once every client had closed its session, the server still holds %d session(s)", len(ids))
		return
	}
	if n := h.srv.TotalWatches(); n > 0 {
		h.found(Leak, "once every session was closed, the server still holds %d watch(es): %s", n, h.watchedPaths())
	}
}
