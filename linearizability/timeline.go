package linearizability

import (
	"cmp"
	"slices"
	"sort"
	"time"
)

// Ranks order the events of one clock reading: those placed first (see
// [First]), then those recorded as they happened, in the order they were
// recorded, then those placed last. rankNone is the zero Instant's: no
// event.
const (
	rankNone uint8 = iota
	rankFirst
	rankNow
	rankLast
)

// event is an event's place on the timeline. Events placed at the same
// reading and rank are equal: they tie, and get the same timestamp.
type event struct {
	at   time.Duration // clock reading since the recorder was created
	rank uint8
	seq  uint64 // for an event recorded as it happened: when, among those
}

func (e event) compare(o event) int {
	if c := cmp.Compare(e.at, o.at); c != 0 {
		return c
	}
	if c := cmp.Compare(e.rank, o.rank); c != 0 {
		return c
	}
	return cmp.Compare(e.seq, o.seq)
}

// timeline maps events to timestamps. Events get strictly increasing
// timestamps in their order, events that tie the same one; instants known
// only as clock readings (observed operations, ground-truth instants,
// faults) are placed against them.
//
// Timestamps are given when a history is built, not as events are
// recorded: an event placed at a reading (see [Recorder.At]) may go before
// events recorded earlier.
type timeline struct {
	events []event       // every event, in the order recorded
	last   time.Duration // the reading of the last event recorded as it happened
	seq    uint64

	// What resolve made of the first resolved events: the distinct
	// events in order (their readings nondecreasing), and their
	// timestamps (strictly increasing).
	resolved int
	keys     []event
	stamps   []int64
}

// now records an event happening at reading.
func (tl *timeline) now(reading time.Duration) event {
	if tl.seq > 0 {
		// A clock that steps back is held at its last reading, so that
		// readings stay ordered like the events.
		reading = max(reading, tl.last)
	}
	tl.last = reading
	tl.seq++
	e := event{at: reading, rank: rankNow, seq: tl.seq}
	tl.events = append(tl.events, e)
	return e
}

// place records an event known by its reading, first or last among that
// reading's events.
func (tl *timeline) place(reading time.Duration, rank uint8) event {
	e := event{at: reading, rank: rank}
	tl.events = append(tl.events, e)
	return e
}

// resolve gives the events their timestamps: each event's is its reading in
// nanoseconds, or one more than the timestamp before it if that is higher.
func (tl *timeline) resolve() {
	if tl.resolved == len(tl.events) {
		return
	}
	tl.resolved = len(tl.events)
	keys := append(tl.keys[:0], tl.events...)
	// Events recorded as they happen come in order; only placed ones
	// need sorting.
	if !slices.IsSortedFunc(keys, event.compare) {
		slices.SortFunc(keys, event.compare)
	}
	tl.keys = slices.Compact(keys)
	tl.stamps = tl.stamps[:0]
	for i, k := range tl.keys {
		stamp := int64(k.at)
		if i > 0 {
			stamp = max(stamp, tl.stamps[i-1]+1)
		}
		tl.stamps = append(tl.stamps, stamp)
	}
}

// stamp returns the timestamp of a recorded event. Call resolve first.
func (tl *timeline) stamp(e event) int64 {
	i, found := slices.BinarySearchFunc(tl.keys, e, event.compare)
	if !found {
		panic("linearizability: an Instant the Recorder did not take")
	}
	return tl.stamps[i]
}

// reading returns the clock reading of the latest event whose timestamp is
// at most stamp (the first event's, for a stamp before every event). Call
// resolve first.
func (tl *timeline) reading(stamp int64) time.Duration {
	i := sort.Search(len(tl.stamps), func(i int) bool { return tl.stamps[i] > stamp })
	if i == 0 {
		if len(tl.keys) == 0 {
			return time.Duration(stamp)
		}
		return tl.keys[0].at
	}
	return tl.keys[i-1].at
}

// bracket returns the closed timestamp interval [lo, hi] for something that
// happened at an instant between the clock readings from and to (to < 0: no
// upper bound). Every event read before from is before lo, every event read
// after to is after hi, and events read within [from, to] — whose order
// relative to the instant is unknown — fall inside the interval. Call
// resolve first.
func (tl *timeline) bracket(from, to time.Duration) (lo, hi int64) {
	// Within those limits the interval stays as close to the readings as
	// it can, so that reports place it where it happened.
	n := len(tl.keys)
	// i: the first event read at or after from. Its timestamp is at least
	// its reading, so at least from.
	i := sort.Search(n, func(i int) bool { return tl.keys[i].at >= from })
	lo = int64(from)
	if i > 0 {
		lo = max(lo, tl.stamps[i-1]+1)
	}
	if to < 0 {
		return lo, Never
	}
	// j: the first event read after to.
	j := sort.Search(n, func(j int) bool { return tl.keys[j].at > to })
	hi = int64(to)
	if j > 0 {
		hi = max(hi, tl.stamps[j-1])
	}
	if j < n {
		hi = min(hi, tl.stamps[j]-1)
	}
	if hi < lo {
		// No event was read within [from, to] and the neighbouring
		// timestamps are adjacent: the instant sits between two events
		// with no integer between them. Touching the later one only makes
		// the two concurrent, which the checker may order either way.
		hi = lo
	}
	return lo, hi
}
