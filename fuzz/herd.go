package fuzz

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake"
)

// This file is the herd detector: a release must wake only the waiters it
// unblocks.

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
	if d.h.sub == nil {
		return false
	}
	for _, span := range d.h.releases[session] {
		if span[0] <= step-1 && (span[1] < 0 || step-1 <= span[1]) {
			return true
		}
	}
	return false
}

// head returns the first node in the recipe's queue: of the nodes under its
// directory, the one a Mutex would put first (recipe.QueueOrder); "" if
// none ends in a sequence number. The nodes are handed over sorted, not
// in the map's order: the queue's order across the counter's wrap is not
// transitive once two sequences are 2^31 apart (a recipe's nodes in two
// directories, or a name that merely ends in digits), and QueueOrder's
// first is then the input order's choice.
func (d *herdDetector) head() string {
	if queue := recipe.QueueOrder(slices.Sorted(maps.Keys(d.owner))); len(queue) > 0 {
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
	if d.h.sub != nil && !d.h.sub.isLock() {
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
	if who := d.h.client(t.Session); who != ownSession {
		return fmt.Sprintf("%s's %s %s", who, t.Op, t.Path)
	}
	return fmt.Sprintf("the harness's %s %s", t.Op, t.Path)
}
