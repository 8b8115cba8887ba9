package linearizability

// Add records an operation of client that was called at call and returned
// output at ret, instants taken earlier: for a caller that learns the
// operation's input or outcome only after the fact, such as a harness that
// stepped its client through the call and hears of the return later. ret
// must not come before call. Operations appear in the history in the order
// they are recorded.
func (r *Recorder) Add(client int, input, output any, call, ret Instant) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addLocked(client, recordedOp{state: opReturned, input: input, output: output, call: call.ev, ret: ret.ev})
}

// AddUnknown records an operation of client that was called at call and
// whose outcome the client will never learn: the process crashed during
// it, or gave up on an answer that said nothing certain. As with
// [Op.Unknown], the operation never returns, and the client carries on
// under a new porcupine client id.
func (r *Recorder) AddUnknown(client int, input any, call Instant) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addLocked(client, recordedOp{state: opUnknown, input: input, call: call.ev})
	r.clients[client] = r.newIDLocked(owner{client: client, ok: true})
}

// FaultAt is [Recorder.Fault] for a fault known to have lasted from start to
// end, instants taken earlier: one read afterwards from a server's log, or
// dated from an earlier event (a crash that began with the process's
// partition).
func (r *Recorder) FaultAt(client int, kind FaultKind, detail string, start, end Instant) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := -1
	if client >= 0 {
		id = r.clientIDLocked(client)
	}
	r.faults = append(r.faults, recordedFault{kind: kind, clientID: id, detail: detail, ended: true, placed: true, start: start.ev, end: end.ev})
}
