package fuzz

import (
	"strings"
	"testing"
	"time"

	"github.com/zksim/zksim/zkfake"
)

// TestHerdAttributesLateWakeups feeds the herd detector a log in which one
// release wakes two waiters, one of them late, and checks that the late
// wakeup is put down to the release: delivered by a follower that caught
// up (with the release's zxid, after other records), or fired on
// reconnect (setWatches, with the zxid of that moment).
func TestHerdAttributesLateWakeups(t *testing.T) {
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	queue := []zkfake.Record{
		{Kind: zkfake.RecordOp, Session: 1, Zxid: 1, Op: "create", Path: lockPath + "/n-", Input: "flags=3 data=\"\"", Result: lockPath + "/n-0000000000", Time: t0},
		{Kind: zkfake.RecordOp, Session: 2, Zxid: 2, Op: "create", Path: lockPath + "/n-", Input: "flags=3 data=\"\"", Result: lockPath + "/n-0000000001", Time: t0},
		{Kind: zkfake.RecordOp, Session: 3, Zxid: 3, Op: "create", Path: lockPath + "/n-", Input: "flags=3 data=\"\"", Result: lockPath + "/n-0000000002", Time: t0},
		// The release: client 1 hears of it at once.
		{Kind: zkfake.RecordOp, Session: 1, Zxid: 4, Op: "delete", Path: lockPath + "/n-0000000000", Time: t0.Add(time.Second)},
		{Kind: zkfake.RecordWatch, Session: 2, Zxid: 4, Op: "EventNodeChildrenChanged", Path: lockPath, Time: t0.Add(time.Second)},
		// Other things happen: a read, a write elsewhere.
		{Kind: zkfake.RecordOp, Session: 2, Zxid: 4, Op: "getChildren", Path: lockPath, Time: t0.Add(2 * time.Second)},
		{Kind: zkfake.RecordOp, Session: 2, Zxid: 5, Op: "setData", Path: "/elsewhere", Time: t0.Add(2 * time.Second)},
	}
	late := map[string]zkfake.Record{
		// A follower catches up and delivers the release's event.
		"a follower catching up": {Kind: zkfake.RecordWatch, Session: 3, Zxid: 4, Op: "EventNodeChildrenChanged", Path: lockPath, Time: t0.Add(3 * time.Second)},
		// Session 3's client reconnects; its watch fires at once, with
		// today's zxid.
		"a reconnect": {Kind: zkfake.RecordWatch, Session: 3, Zxid: 5, Op: "EventNodeChildrenChanged", Path: lockPath, Time: t0.Add(3 * time.Second)},
	}
	for how, r := range late {
		t.Run(how, func(t *testing.T) {
			h := &harness{taken: map[delivery]bool{}, sessions: map[int64]string{1: "client 0", 2: "client 1", 3: "client 2"}}
			log := append(append([]zkfake.Record(nil), queue...), r)
			for _, r := range log {
				if r.Kind == zkfake.RecordWatch {
					h.taken[delivery{session: r.Session, path: r.Path, at: r.Time}] = true
				}
			}
			d := newHerdDetector(h)
			var found string
			for i, r := range log {
				if msg := d.observe(r, i+1); msg != "" {
					found = msg
				}
			}
			want := "client 0's delete " + lockPath + "/n-0000000000 at step 4 woke client 1 and client 2 (late, at step 8)"
			if !strings.HasPrefix(found, want) {
				t.Fatalf("got %q, want it to begin %q", found, want)
			}
		})
	}
}

// TestHerdHeadIsTheSameEveryTime checks that the queue's first node does
// not depend on the order in which the detector's books hand over its
// nodes. Across the counter's wrap the queue's order is not transitive
// once two sequences are 2^31 apart (here 1 and -2147483647, each ahead of
// the other, and -2147483648 between): a head taken from the books' map
// order told python-zk/kazoo#429's case 101 of seed 5 two ways, with a
// herd and without.
func TestHerdHeadIsTheSameEveryTime(t *testing.T) {
	d := newHerdDetector(&harness{})
	for i, name := range []string{"/s/imports/0100000000000001", "/s/imports-__lock__/n__lock__-2147483647", "/s/imports-__lock__/n__lock__-2147483648"} {
		d.owner[name] = int64(i + 1)
	}
	first := d.head()
	for range 100 {
		if got := d.head(); got != first {
			t.Fatalf("the head is %q, then %q", first, got)
		}
	}
}
