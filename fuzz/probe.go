package fuzz

import "sync"

// This file is the harness's own reads of a Recipe's shared state
// (Recipe.Read), recorded into the history, and the check of that state
// once the case has settled (Recipe.Final).

// probe makes the Recipe's Read, through the harness's reading session,
// after a step that changed the server's tree, or, when settled, once
// more whatever the step did: the read's records join the history in the
// reader's row, spanning the read. While members of the ensemble are
// stopped it reads nothing: a read would wait for a quorum, and time would
// pass that the story does not tell.
func (h *harness) probe(settled bool) {
	sub := h.sub
	if sub.read == nil || h.finding != nil {
		return
	}
	if len(h.stopped) > 0 {
		return // no quorum, maybe: a read would wait for it, and time pass
	}
	read := h.readSession()
	zxid := h.srv.Zxid()
	if zxid == h.probedZxid && !settled {
		return
	}
	h.probedZxid = zxid
	call := &Call{mu: new(sync.Mutex), session: read.SessionID, fence: func(int64) bool { return false }}
	start := h.rec.Now()
	err := sub.read(read, call)
	end := h.rec.Now()
	for _, rec := range call.records {
		if err != nil || rec.unknown {
			// The harness's session is never faulted: a read that fails
			// tells nothing, and is left out rather than left open.
			continue
		}
		h.add(readerRow, rec.input, rec.output, start, end)
		h.note("the harness reads the shared state: %v gives %v", rec.input, rec.output)
	}
	if err != nil {
		h.note("the harness's read of the shared state fails: %v", err)
	}
}

// checkFinal is Recipe.Final, once the case has settled.
func (h *harness) checkFinal() {
	if h.sub.final == nil || h.finding != nil {
		return
	}
	if trouble := h.sub.final(h.readSession()); trouble != "" {
		h.found(Convergence, "once every client had stopped and everything had settled, the shared state is wrong: %s", trouble)
	}
}
