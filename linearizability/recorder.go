package linearizability

import (
	"math"
	"sync"
	"time"
)

// Never is the Return timestamp of an operation whose outcome is unknown.
// Following porcupine's advice, such an operation is treated as concurrent
// with everything after its call, so the checker may place it anywhere later,
// including after the end of the history, which amounts to "it never took
// effect".
const Never int64 = math.MaxInt64

// Clock tells a Recorder what time it is. Its readings must never go
// backwards.
type Clock interface {
	Now() time.Time
}

// timePackageClock reads the time package, whose clock is virtual inside a
// testing/synctest bubble.
type timePackageClock struct{}

func (timePackageClock) Now() time.Time { return time.Now() }

// Recorder records a history of operations. It is safe for use by many
// goroutines at once.
//
// A client is a number the caller picks for one sequential worker (one
// goroutine issuing one operation at a time). The recorder maps each client
// to a porcupine client id, and gives the client a fresh id after an
// operation with an unknown outcome, because that operation stays open
// forever while the worker carries on.
//
// Timestamps are nanoseconds since the recorder was created, made strictly
// increasing in the order events are recorded: events recorded at the same
// clock reading (common under synctest, where time stands still while
// goroutines run) still keep the real order in which they happened.
type Recorder struct {
	clock Clock
	start time.Time

	mu       sync.Mutex
	timeline timeline
	ops      []recordedOp
	clients  map[int]int
	nextID   int
	faults   []recordedFault
}

// opState says how much of an operation the recorder has seen.
type opState uint8

const (
	opPending  opState = iota // called, not yet returned
	opReturned                // returned with a known output
	opUnknown                 // the client will never learn the outcome
	opObserved                // not called by a client: observed with bounds
)

type recordedOp struct {
	state    opState
	clientID int
	tag      string
	input    any
	output   any
	// call and ret are timestamps of recorded events; for observed
	// operations they are computed from from/to when the history is built.
	call, ret int64
	// callAt is the clock reading at the call (or the observed lower bound);
	// to is the observed upper bound, or negative when there is none.
	callAt, to time.Duration
}

type recordedFault struct {
	kind     FaultKind
	clientID int
	detail   string
	from, to time.Duration
	ended    bool
}

// NewRecorder returns a recorder reading clock, or the time package's clock
// when clock is nil. Under testing/synctest, create it inside the bubble so
// that it shares the bubble's virtual clock.
func NewRecorder(clock Clock) *Recorder {
	if clock == nil {
		clock = timePackageClock{}
	}
	return &Recorder{clock: clock, start: clock.Now(), clients: make(map[int]int)}
}

// Op is an operation in flight, returned by [Recorder.Call]. Complete it with
// exactly one of Return or Unknown; later completions are ignored.
type Op struct {
	r     *Recorder
	index int
}

// Call records that client invokes an operation with input, now.
func (r *Recorder) Call(client int, input any) *Op {
	return r.CallTagged(client, "", input)
}

// CallTagged is Call for an operation carrying a tag that identifies it
// uniquely in the server's log — the data it writes, the name of the node it
// creates — so that a [GroundTruth] can settle it if its outcome is unknown.
func (r *Recorder) CallTagged(client int, tag string, input any) *Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	at := r.sinceStart()
	r.ops = append(r.ops, recordedOp{
		state:    opPending,
		clientID: r.clientIDLocked(client),
		tag:      tag,
		input:    input,
		call:     r.timeline.record(at),
		callAt:   at,
		ret:      Never,
		to:       -1,
	})
	return &Op{r: r, index: len(r.ops) - 1}
}

// Return records that the operation returned output, now.
func (o *Op) Return(output any) {
	r := o.r
	r.mu.Lock()
	defer r.mu.Unlock()
	op := &r.ops[o.index]
	if op.state != opPending {
		return
	}
	op.state = opReturned
	op.output = output
	op.ret = r.timeline.record(r.sinceStart())
}

// Unknown records that the client will never learn the operation's outcome:
// it crashed, or the reply was lost. The operation never returns, and the
// client carries on under a new porcupine client id.
func (o *Op) Unknown() {
	r := o.r
	r.mu.Lock()
	defer r.mu.Unlock()
	op := &r.ops[o.index]
	if op.state != opPending {
		return
	}
	op.state = opUnknown
	for client, id := range r.clients {
		if id == op.clientID {
			r.clients[client] = r.newIDLocked()
		}
	}
}

// Observe records an operation no client invoked but that is known to have
// happened somewhere between from and to — a session expiry seen in the
// server's log (from == to), or bounded by what a client saw: it was
// connected at from and told of the expiry at to. A zero to means no upper
// bound is known yet. The operation gets a porcupine client id of its own.
func (r *Recorder) Observe(input, output any, from, to time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	upper := time.Duration(-1)
	if !to.IsZero() {
		upper = to.Sub(r.start)
	}
	r.ops = append(r.ops, recordedOp{
		state:    opObserved,
		clientID: r.newIDLocked(),
		input:    input,
		output:   output,
		callAt:   from.Sub(r.start),
		to:       upper,
	})
}

// FaultKind names a kind of injected fault, for reports.
type FaultKind string

// The faults a harness injects.
const (
	FaultCrash     FaultKind = "crash"
	FaultExpiry    FaultKind = "session expiry"
	FaultPartition FaultKind = "partition"
	FaultLostReply FaultKind = "lost reply"
)

// Fault records that a fault of kind hit client now (a negative client means
// no particular client: the fault is shown on a row of its own). Faults do
// not affect checking; they annotate reports. The returned function records
// the end of a fault that lasts, such as a partition being healed; a fault
// that is an instant needs no end.
func (r *Recorder) Fault(client int, kind FaultKind, detail string) (end func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := -1
	if client >= 0 {
		id = r.clientIDLocked(client)
	}
	at := r.sinceStart()
	r.faults = append(r.faults, recordedFault{kind: kind, clientID: id, detail: detail, from: at, to: at})
	index := len(r.faults) - 1
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		f := &r.faults[index]
		if !f.ended {
			f.ended = true
			f.to = max(r.sinceStart(), f.from)
		}
	}
}

// History returns what has been recorded so far. Operations still in flight
// have an unknown outcome: they have not returned, and may never.
func (r *Recorder) History() History {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := History{Operations: make([]Operation, 0, len(r.ops)), Faults: make([]Fault, 0, len(r.faults))}
	for _, op := range r.ops {
		call, ret := op.call, op.ret
		if op.state == opObserved {
			call, ret = r.timeline.bracket(op.callAt, op.to)
		}
		output := op.output
		if op.state != opReturned && op.state != opObserved {
			output = nil
		}
		h.Operations = append(h.Operations, Operation{
			ClientID: op.clientID,
			Tag:      op.tag,
			Input:    op.input,
			Output:   output,
			Call:     call,
			Return:   ret,
		})
	}
	for _, f := range r.faults {
		start, end := r.timeline.bracket(f.from, f.to)
		h.Faults = append(h.Faults, Fault{Kind: f.kind, ClientID: f.clientID, Detail: f.detail, Start: start, End: end})
	}
	return h
}

// sinceStart reads the clock. Called with r.mu held, so that readings are
// taken in the same order as events are recorded.
func (r *Recorder) sinceStart() time.Duration {
	return r.clock.Now().Sub(r.start)
}

func (r *Recorder) clientIDLocked(client int) int {
	id, ok := r.clients[client]
	if !ok {
		id = r.newIDLocked()
		r.clients[client] = id
	}
	return id
}

func (r *Recorder) newIDLocked() int {
	id := r.nextID
	r.nextID++
	return id
}

// timeline maps clock readings to timestamps. Recorded events get strictly
// increasing timestamps; instants known only as clock readings (observed
// operations, ground-truth instants, faults) are placed against them.
type timeline struct {
	readings []time.Duration // clock reading of each recorded event; nondecreasing
	stamps   []int64         // timestamp of each recorded event; strictly increasing
}

// record adds an event read at reading and returns its timestamp.
func (tl *timeline) record(reading time.Duration) int64 {
	stamp := int64(reading)
	if n := len(tl.stamps); n > 0 {
		// A clock that steps back is held at its last reading, so that
		// readings stay ordered like the events.
		reading = max(reading, tl.readings[n-1])
		stamp = max(stamp, tl.stamps[n-1]+1)
	}
	tl.readings = append(tl.readings, reading)
	tl.stamps = append(tl.stamps, stamp)
	return stamp
}

// bracket returns the closed timestamp interval [lo, hi] for something that
// happened at an instant between the clock readings from and to (to < 0: no
// upper bound). Every recorded event read before from is before lo, every
// event read after to is after hi, and events read within [from, to] — whose
// order relative to the instant is unknown — fall inside the interval.
func (tl *timeline) bracket(from, to time.Duration) (lo, hi int64) {
	// Within those limits the interval stays as close to the readings as
	// it can, so that reports place it where it happened.
	n := len(tl.readings)
	// i: the first event read at or after from. Its timestamp is at least
	// its reading, so at least from.
	i := searchDurations(tl.readings, func(d time.Duration) bool { return d >= from })
	lo = int64(from)
	if i > 0 {
		lo = max(lo, tl.stamps[i-1]+1)
	}
	if to < 0 {
		return lo, Never
	}
	// j: the first event read after to.
	j := searchDurations(tl.readings, func(d time.Duration) bool { return d > to })
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

// searchDurations returns the first index at which pred holds, for a pred
// that is false then true along the slice.
func searchDurations(ds []time.Duration, pred func(time.Duration) bool) int {
	lo, hi := 0, len(ds)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if pred(ds[mid]) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}
