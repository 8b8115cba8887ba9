package fakelog

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/zkfake"
)

// Truth is a fake server's event log read as the ground truth about one
// recorded history: a [linearizability.GroundTruth] for
// [linearizability.Recorder.Settle].
//
// It settles znode operations ([linearizability.ZnodeInput]) whose outcome
// is unknown, and observed [linearizability.SessionExpiry] operations:
//
//   - Applied, when the log holds the request's record: pinned to the
//     instant of that record, with the answer the server gave (a write's
//     error, created path or stat; a read's answer is not in the log, so a
//     read gets no output and stays unchecked);
//   - NotApplied, when the request never reached the server — the log
//     records it as a lost request, or holds nothing for it at all, which
//     is what a call cut off by a partition leaves;
//   - Undetermined, when the log cannot say which record, if any, is the
//     operation's.
//
// A session expiry is Applied at the instant the log shows the session
// expired or closed.
//
// # How operations are found in the log
//
// Log records carry no trace of the recorder's operations, and many of them
// share one instant under testing/synctest, so neither the instant nor the
// request's arguments alone say which record is which operation: a session
// may send the same delete twice within one instant. Truth therefore aligns
// each session's operations, in the order they were called, with that
// session's requests in the log, in log order: every operation whose answer
// the client got has exactly one record, with that answer; every other one
// has at most one, with its arguments. It settles an operation only when
// every such alignment agrees on its record (or on its having none). This
// assumes what holds for histories recorded by [Record]:
//
//   - each operation is one request, issued and answered under the session
//     its input names (the session does not change during the call);
//   - a session's operations are sequential, and every request the session
//     sends is in the history;
//   - the log was read after every recorded call had returned: the fake
//     applies a request within the call or not at all.
//
// When a session's requests cannot be aligned at all, its operations stay
// Undetermined; nothing is guessed.
//
// # Placement
//
// [linearizability.Recorder.Settle] pins an applied operation to the
// recorder events read at the same clock reading as its log record. Under
// synctest many events share a reading, and the log cannot order its record
// among them, so the settled operation becomes concurrent with all of them:
// sound, since its true position is among them, but looser the more events
// share the instant. [Config.Lockstep] runs each step at its own instant,
// which keeps the placement tight.
type Truth struct {
	fates map[opKey]linearizability.Fate
	ends  map[int64]time.Time
}

var _ linearizability.GroundTruth = (*Truth)(nil)

// opKey names an operation of a history: its client id and call timestamp
// are unique, and Settle asks about operations as History returned them.
type opKey struct {
	client int
	call   int64
}

// GroundTruth returns srv's event log as the ground truth for h, a history
// recorded against srv: pass it to [linearizability.Recorder.Settle] of the
// recorder h came from. Read it once every recorded call has returned.
func GroundTruth(srv *zkfake.Server, h linearizability.History) *Truth {
	return NewTruth(srv.Log(), h)
}

// Settle settles rec's history with srv's event log: the history with every
// operation the log can account for settled, as [GroundTruth] describes.
func Settle(rec *linearizability.Recorder, srv *zkfake.Server) (linearizability.History, error) {
	return rec.Settle(GroundTruth(srv, rec.History()))
}

// NewTruth is [GroundTruth] for an event log already read.
func NewTruth(log []zkfake.Record, h linearizability.History) *Truth {
	t := &Truth{fates: make(map[opKey]linearizability.Fate), ends: make(map[int64]time.Time)}
	requests := make(map[int64][]request)
	for _, r := range log {
		switch r.Kind {
		case zkfake.RecordOp:
			if r.Session != 0 { // the server's own transactions (reaping) have none
				requests[r.Session] = append(requests[r.Session], request{rec: r})
			}
		case zkfake.RecordFault:
			switch {
			case r.Result == "request lost" || strings.HasPrefix(r.Result, "packet of"):
				requests[r.Session] = append(requests[r.Session], request{rec: r, lost: true})
			case r.Result == "reply lost":
				// The fault follows the record of the request whose
				// reply it lost.
				if list := requests[r.Session]; len(list) > 0 && !list[len(list)-1].lost && list[len(list)-1].rec.Op == r.Op {
					list[len(list)-1].replyLost = true
				}
			}
		case zkfake.RecordSession:
			if r.Op == "expireSession" || r.Op == "closeSession" {
				if _, seen := t.ends[r.Session]; !seen {
					t.ends[r.Session] = r.Time
				}
			}
		}
	}
	sessions := make(map[int64][]sessionOp)
	for _, op := range h.Operations {
		in, ok := op.Input.(linearizability.ZnodeInput)
		if !ok {
			continue
		}
		out, known := op.Output.(linearizability.ZnodeOutput)
		known = known && !op.Unknown() && isAnswer(in.Op, out.Err)
		sessions[in.Session] = append(sessions[in.Session], sessionOp{
			key:   opKey{op.ClientID, op.Call},
			in:    in,
			out:   out,
			known: known,
		})
	}
	for session, ops := range sessions {
		t.settleSession(ops, requests[session])
	}
	return t
}

// Fate tells what became of op, as the log has it.
func (t *Truth) Fate(op linearizability.Operation, called time.Time) linearizability.Fate {
	if e, ok := op.Input.(linearizability.SessionExpiry); ok {
		if at, ok := t.ends[e.Session]; ok {
			return linearizability.Fate{Verdict: linearizability.Applied, At: at}
		}
		if op.Return == linearizability.Never {
			// The session outlived the log, and with it the history:
			// the expiry, whenever it comes, follows everything.
			return linearizability.Fate{Verdict: linearizability.NotApplied}
		}
		return linearizability.Fate{}
	}
	return t.fates[opKey{op.ClientID, op.Call}]
}

// request is one request of a session as the log shows it.
type request struct {
	rec zkfake.Record
	// lost: the request never reached the server ("request lost", or a
	// packet over the server's limit); rec is the fault record.
	lost bool
	// replyLost: the server applied the request and its reply was lost.
	replyLost bool
}

// sessionOp is one operation of a session, in call order.
type sessionOp struct {
	key   opKey
	in    linearizability.ZnodeInput
	out   linearizability.ZnodeOutput
	known bool // the client got ZooKeeper's answer
}

// settleSession aligns a session's operations with its requests and records
// the fate of each operation with an unknown outcome on which every
// alignment agrees.
//
// An alignment maps the operations, in order, onto the requests, in order,
// using every request once: an operation whose answer the client got takes
// the next request, which must carry that answer; any other operation takes
// the next request if it has the operation's arguments, or none. Known
// operations each take exactly one request, so after the first i operations
// the requests used number between known(i) and known(i)+unknown(i): the
// tables below hold only that band.
func (t *Truth) settleSession(ops []sessionOp, reqs []request) {
	n, m := len(ops), len(reqs)
	known := make([]int, n+1)   // known operations among the first i
	unknown := make([]int, n+1) // unknown ones
	for i, op := range ops {
		known[i+1], unknown[i+1] = known[i], unknown[i]
		if op.known {
			known[i+1]++
		} else {
			unknown[i+1]++
		}
	}
	if unknown[n] == 0 {
		return
	}
	newTable := func() [][]bool {
		tab := make([][]bool, n+1)
		for i := range tab {
			tab[i] = make([]bool, unknown[i]+1)
		}
		return tab
	}
	at := func(tab [][]bool, i, j int) bool {
		d := j - known[i]
		return d >= 0 && d < len(tab[i]) && tab[i][d]
	}
	set := func(tab [][]bool, i, j int) {
		if d := j - known[i]; d >= 0 && d < len(tab[i]) {
			tab[i][d] = true
		}
	}
	takes := func(i, j int) bool { return j < m && matches(ops[i], reqs[j]) }

	// completes[i][j]: operations i.. can be aligned with requests j..
	completes := newTable()
	set(completes, n, m)
	for i := n - 1; i >= 0; i-- {
		for d := range completes[i] {
			j := known[i] + d
			ok := takes(i, j) && at(completes, i+1, j+1)
			if !ops[i].known {
				ok = ok || at(completes, i+1, j)
			}
			completes[i][d] = ok
		}
	}
	if !at(completes, 0, 0) {
		return // the log and the history disagree: settle nothing
	}
	// reaches[i][j]: operations ..i-1 can be aligned with requests ..j-1.
	reaches := newTable()
	set(reaches, 0, 0)
	for i := range n {
		for d, ok := range reaches[i] {
			j := known[i] + d
			if !ok {
				continue
			}
			if takes(i, j) {
				set(reaches, i+1, j+1)
			}
			if !ops[i].known {
				set(reaches, i+1, j)
			}
		}
	}
	for i, op := range ops {
		if op.known {
			continue
		}
		// applied is the index of the request the operation took in
		// every alignment so far, -1 for none taken or a lost one.
		applied, options := -1, 0
		consider := func(j int) {
			switch {
			case options == 0:
				applied, options = j, 1
			case j != applied:
				options = 2
			}
		}
		for d, ok := range reaches[i] {
			if !ok {
				continue
			}
			j := known[i] + d
			if at(completes, i+1, j) {
				consider(-1)
			}
			if takes(i, j) && at(completes, i+1, j+1) {
				if reqs[j].lost {
					consider(-1)
				} else {
					consider(j)
				}
			}
		}
		switch {
		case options != 1:
			// Undetermined: more than one reading of the log.
		case applied < 0:
			t.fates[op.key] = linearizability.Fate{Verdict: linearizability.NotApplied}
		default:
			t.fates[op.key] = appliedFate(op.in, reqs[applied].rec)
		}
	}
}

// appliedFate is the fate of an operation the server applied as rec shows.
func appliedFate(in linearizability.ZnodeInput, rec zkfake.Record) linearizability.Fate {
	fate := linearizability.Fate{Verdict: linearizability.Applied, At: rec.Time}
	switch in.Op {
	case linearizability.Create:
		out := linearizability.ZnodeOutput{Err: rec.Err}
		if rec.Err == nil {
			out.Path = rec.Result
		}
		fate.Output = out
	case linearizability.Set:
		out := linearizability.ZnodeOutput{Err: rec.Err}
		if rec.Err == nil {
			out.Stat = linearizability.StatOf(&rec.Stat)
		}
		fate.Output = out
	case linearizability.Delete:
		fate.Output = linearizability.ZnodeOutput{Err: rec.Err}
	}
	// A read's answer (data, children) is not in the log: it stays
	// unknown, which leaves it unchecked.
	return fate
}

// matches reports whether op can be the request req: same request, and for
// an operation whose answer the client got, that answer.
func matches(op sessionOp, req request) bool {
	r := req.rec
	if r.Op != logName(op.in.Op) || r.Path != op.in.Path {
		return false
	}
	if !req.lost && r.Input != loggedInput(op.in) {
		return false
	}
	if !op.known {
		return true
	}
	if req.lost || req.replyLost {
		return false
	}
	out := op.out
	if op.in.Op == linearizability.Exists {
		if out.Exists {
			return r.Err == nil && linearizability.StatOf(&r.Stat) == out.Stat
		}
		return errors.Is(r.Err, zk.ErrNoNode)
	}
	if !sameError(out.Err, r.Err) {
		return false
	}
	if out.Err != nil {
		return true
	}
	switch op.in.Op {
	case linearizability.Create:
		return r.Result == out.Path
	case linearizability.Set, linearizability.Get, linearizability.Children:
		return linearizability.StatOf(&r.Stat) == out.Stat
	}
	return true
}

// logName is the name the fake's log gives a request.
func logName(op linearizability.ZnodeOp) string {
	switch op {
	case linearizability.Create:
		return "create"
	case linearizability.Delete:
		return "delete"
	case linearizability.Set:
		return "setData"
	case linearizability.Get:
		return "getData"
	case linearizability.Exists:
		return "exists"
	case linearizability.Children:
		return "getChildren"
	case linearizability.Sync:
		return "sync"
	}
	return ""
}

// loggedInput renders a request's arguments as the fake's log does.
func loggedInput(in linearizability.ZnodeInput) string {
	switch in.Op {
	case linearizability.Create:
		return fmt.Sprintf("flags=%d data=%q", in.Flags, in.Data)
	case linearizability.Set:
		return fmt.Sprintf("version=%d data=%q", in.Version, in.Data)
	case linearizability.Delete:
		return fmt.Sprintf("version=%d", in.Version)
	}
	return ""
}

// answers lists, per operation, the errors with which ZooKeeper answers it;
// any other error leaves the outcome unknown, as CheckZnodes has it.
var answers = map[linearizability.ZnodeOp][]error{
	linearizability.Create:   {zk.ErrNoNode, zk.ErrNodeExists, zk.ErrNoChildrenForEphemerals},
	linearizability.Delete:   {zk.ErrNoNode, zk.ErrBadVersion, zk.ErrNotEmpty},
	linearizability.Set:      {zk.ErrNoNode, zk.ErrBadVersion},
	linearizability.Get:      {zk.ErrNoNode},
	linearizability.Children: {zk.ErrNoNode},
}

// isAnswer reports whether err is an answer ZooKeeper gives op.
func isAnswer(op linearizability.ZnodeOp, err error) bool {
	if err == nil {
		return true
	}
	for _, answer := range answers[op] {
		if errors.Is(err, answer) {
			return true
		}
	}
	return false
}

func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return errors.Is(a, b)
}
