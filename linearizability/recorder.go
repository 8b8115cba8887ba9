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
//
// A caller that learns of an operation only after the fact — a harness that
// steps its clients one at a time and hears of a return later, or reads a
// server's log once a run is over — takes the instants of its events as
// they happen or from their clock readings ([Recorder.Now],
// [Recorder.At]) and records the operation once it knows it
// ([Recorder.Add]). An event placed at a reading takes its place among the
// events of that reading, wherever it was recorded.
type Recorder struct {
	clock Clock
	start time.Time

	mu       sync.Mutex
	timeline timeline
	ops      []recordedOp
	clients  map[int]int
	owners   []owner // for each porcupine id, the client it was given to
	faults   []recordedFault
}

// owner is the client a porcupine id was given to; an observed operation's
// id belongs to no client.
type owner struct {
	client int
	ok     bool
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
	// call and ret are events of the timeline (ret only once returned);
	// an observed operation has none, and is placed from callAt and to
	// when the history is built.
	call, ret event
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
	// placed: the fault runs from event start to event end (see
	// [Recorder.FaultAt]) rather than between the readings from and to.
	placed     bool
	start, end event
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
	call := r.timeline.now(r.sinceStart())
	return &Op{r: r, index: r.addLocked(client, recordedOp{state: opPending, tag: tag, input: input, call: call})}
}

// addLocked appends op, a called operation, as client's, and returns its
// index.
func (r *Recorder) addLocked(client int, op recordedOp) int {
	op.clientID = r.clientIDLocked(client)
	op.callAt, op.to = op.call.at, -1
	r.ops = append(r.ops, op)
	return len(r.ops) - 1
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
	op.ret = r.timeline.now(r.sinceStart())
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
			r.clients[client] = r.newIDLocked(owner{client: client, ok: true})
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
		clientID: r.newIDLocked(owner{}),
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
	r.timeline.resolve()
	h := History{Operations: make([]Operation, 0, len(r.ops)), Faults: make([]Fault, 0, len(r.faults))}
	for _, op := range r.ops {
		var call, ret int64
		switch op.state {
		case opObserved:
			call, ret = r.timeline.bracket(op.callAt, op.to)
		case opReturned:
			call, ret = r.timeline.stamp(op.call), r.timeline.stamp(op.ret)
		default:
			call, ret = r.timeline.stamp(op.call), Never
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
		var start, end int64
		if f.placed {
			start, end = r.timeline.stamp(f.start), r.timeline.stamp(f.end)
			end = max(end, start)
		} else {
			start, end = r.timeline.bracket(f.from, f.to)
		}
		h.Faults = append(h.Faults, Fault{Kind: f.kind, ClientID: f.clientID, Detail: f.detail, Start: start, End: end})
	}
	return h
}

// sinceStart reads the clock. Called with r.mu held, so that readings are
// taken in the same order as events are recorded.
func (r *Recorder) sinceStart() time.Duration {
	return r.clock.Now().Sub(r.start)
}

// Client returns the client whose operations got porcupine id id, for a
// caller that names the rows of a history after its own workers; ok is
// false for an observed operation's id, which is no client's.
func (r *Recorder) Client(id int) (client int, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id < 0 || id >= len(r.owners) {
		return 0, false
	}
	return r.owners[id].client, r.owners[id].ok
}

func (r *Recorder) clientIDLocked(client int) int {
	id, ok := r.clients[client]
	if !ok {
		id = r.newIDLocked(owner{client: client, ok: true})
		r.clients[client] = id
	}
	return id
}

func (r *Recorder) newIDLocked(o owner) int {
	r.owners = append(r.owners, o)
	return len(r.owners) - 1
}
