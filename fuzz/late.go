package fuzz

// go-zookeeper hands a watch event to a channel the recipe's goroutine
// reads when it gets to it: a goroutine busy with a request reads the event
// only after that request's reply, though the server sent the event first.
// A recipe that takes the reply's picture of the world without the event
// (an Unlock that finds its node gone and calls it released, when the event
// that would have said "deleted by someone else" waits unread) is wrong
// only in that order, which the harness draws: an actLateEvent holds back
// the client's next watch event until the reply to a request the client
// makes after it, or until the client has nothing else to do.

// holdLate holds back inc's next watch event, if one is armed and waits
// while the client has a request at the gate, and reports whether it did.
func (h *harness) holdLate(inc *incarnation) bool {
	inc.mu.Lock()
	// Only a client with a request at the gate is busy: one that has
	// nothing else to do reads its event at once.
	if !inc.lateNext || inc.late != nil || len(inc.handOvers) == 0 || len(inc.pending) == 0 {
		inc.mu.Unlock()
		return false
	}
	w := inc.takeFirstHandOver()
	inc.late, inc.lateNext, inc.lateStep = &w, false, h.cur.index
	inc.mu.Unlock()
	h.tally.LateEvents++
	h.note("%s's watch event on %s is held back from its recipe", inc.slot.name(), StableName(eventPath(w.key)))
	return true
}

// releaseLate hands inc's held event over once a request the client made
// after it was answered, and reports whether it did.
func (h *harness) releaseLate(inc *incarnation, c completion) bool {
	inc.mu.Lock()
	w := inc.late
	due := w != nil && c.req.point == noPoint && c.req.step > inc.lateStep
	if due {
		inc.handLateOver()
	}
	inc.mu.Unlock()
	if due {
		h.tally.LateEventsAfterReply++
		h.note("%s's recipe now hears its held watch event on %s, after the reply to its %s", inc.slot.name(), StableName(eventPath(w.key)), c.req.method)
	}
	return due
}

// releaseIdleLate hands over the held events of clients with nothing else
// to do (no request waits at the gate), as one step, and reports whether
// there were any: a held event is late, not lost.
func (h *harness) releaseIdleLate() bool {
	var idle []*slot
	for _, s := range h.slots {
		inc := s.inc
		inc.mu.Lock()
		ok := inc.late != nil && len(inc.pending) == 0 && !inc.dead
		inc.mu.Unlock()
		if ok {
			idle = append(idle, s)
		}
	}
	if len(idle) == 0 {
		return false
	}
	h.begin("clients with a held watch event and nothing else to do hear it")
	for _, s := range idle {
		inc := s.inc
		inc.mu.Lock()
		w := inc.late
		inc.handLateOver()
		inc.mu.Unlock()
		h.note("%s's recipe now hears its held watch event on %s", s.name(), StableName(eventPath(w.key)))
	}
	h.settle()
	return true
}

// handLateOver hands inc's held event over; inc.mu is held and one is.
func (inc *incarnation) handLateOver() {
	close(inc.late.ready)
	inc.late = nil
}

// eventPath is the path in a hand-over key (see gatedConn.forward).
func eventPath(key string) string {
	for i := range len(key) {
		if key[i] == 0 {
			return key[:i]
		}
	}
	return key
}

// holdsLate reports whether a watch event of inc's is held back.
func (inc *incarnation) holdsLate() bool {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	return inc.late != nil
}
