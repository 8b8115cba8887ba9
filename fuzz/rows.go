package fuzz

import (
	"fmt"
	"math"

	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/zkfake"
)

// This file keeps the history's rows: porcupine's clients, the operations
// the clients record, and the server's session ends, as the case's result.

// porcClient names the client whose row in the history is id.
func (h *harness) porcClient(id int) string {
	if inc := h.rowInc(id); inc != nil {
		return incName(inc)
	}
	if row, ok := h.rec.Client(id); ok && row == readerRow {
		return "the harness's reader"
	}
	return fmt.Sprintf("row %d", id)
}

// rowInc returns the process whose row in the history is id, nil if it is
// no process's.
func (h *harness) rowInc(id int) *incarnation {
	if row, ok := h.rec.Client(id); ok {
		for _, inc := range h.incs {
			if inc.row == row {
				return inc
			}
		}
	}
	return nil
}

// The rows of the history that are no client's: the harness's own
// deletions of clients' nodes, the session ends read from the server's
// log, and the harness's reads of a Recipe's shared state (Recipe.Read). The processes of clients are numbered from 0 (incarnation.row), so
// these take numbers from the other end.
const (
	operatorRow = math.MaxInt - iota
	serverRow
	readerRow
)

// add records an operation of row (a process's number, or one of the rows
// that are no client's), told in the current step.
func (h *harness) add(row int, in, out any, call, ret linearizability.Instant) {
	h.rec.Add(row, in, out, call, ret)
	h.opSteps = append(h.opSteps, h.cur.index+1)
}

// addUnknown records an operation of the process numbered row whose
// outcome the client never learns, told in the current step.
func (h *harness) addUnknown(row int, in any, call linearizability.Instant) {
	h.rec.AddUnknown(row, in, call)
	h.opSteps = append(h.opSteps, h.cur.index+1)
}

// result gathers what the case leaves for the checks outside the bubble. The
// session expiries in the server's log go into the history, so the model
// knows when a hold ended without an Unlock: the log is the ground truth of
// when the server expired a session. A session a client closed ends its
// holds the same way.
func (h *harness) result() *caseResult {
	log := h.srv.Log()
	for _, r := range log {
		if r.Kind == zkfake.RecordSession && (r.Op == "expireSession" || r.Op == "closeSession") {
			// The server's timers fire as their instant begins, before
			// anything the harness and the clients do at it.
			at := h.rec.At(r.Time, linearizability.First)
			h.rec.Add(serverRow, linearizability.SessionExpiry{Session: r.Session}, struct{}{}, at, at)
			h.rec.FaultAt(-1, linearizability.FaultExpiry, fmt.Sprintf("session %#x (%s)", r.Session, h.faultClient(r.Session)), at, at)
		}
	}
	h.tell(log)
	history := h.rec.History()
	c := &caseResult{
		tally:   h.tally,
		finding: h.finding,
		steps:   h.nSteps,
		ops:     history.Operations,
		faults:  history.Faults,
		h:       h,
		log:     log,
	}
	if c.finding != nil {
		c.finding.Story, c.finding.EventLog = c.story(), c.eventLog()
	}
	return c
}

// faultClient names the client of a session in a fault of the history; a
// session of the harness's own goes by its number, as it always has.
func (h *harness) faultClient(session int64) string {
	if h.sessions[session] == ownSession {
		return fmt.Sprintf("session %#x", session)
	}
	return h.client(session)
}
