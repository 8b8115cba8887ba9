package fuzz

import (
	"fmt"
	"time"
)

// stepDownGrace is how long a handle may go on saying it holds (leads,
// holds a lock's side, a lease) once its client is on a new session, the
// one it held in expired. A handle may learn of it only by looking:
// recipe.Mutex polls its Conn every 100ms for what no watch event tells
// (a watch it had not armed again yet).
const stepDownGrace = time.Second

// StepDown is a check a Recipe's Check can make of a handle that holds
// something in its session (a leadership, a lock's side, a lease): once
// the session it holds in has expired and its client is on a new one, it
// must stop saying it holds within a second of its own time, and no
// finding is made while one of its requests waits at the gate: the handle
// may be waiting to learn of it from that request. Keep one StepDown per
// hold; its zero value is ready to use.
type StepDown struct {
	movedOn time.Time // when the check first saw the client on a new session, the handle still saying it holds
}

// Check returns what is wrong, "" if nothing: held is the session the
// hold was taken in, claims whether the handle says it holds now, and
// claim how to say so in a finding ("its lock still says it holds").
func (d *StepDown) Check(v View, held int64, claims bool, claim string) string {
	if v.Session == held || v.Session == 0 || !v.Expired(held) || !claims {
		d.movedOn = time.Time{}
		return ""
	}
	if d.movedOn.IsZero() {
		d.movedOn = time.Now()
	}
	late := time.Since(d.movedOn)
	if late < stepDownGrace || v.Gated {
		return ""
	}
	return fmt.Sprintf("%s, %v after the session it was taken in, %#x, had expired and the client had a new one, %#x",
		claim, late.Round(time.Millisecond), held, v.Session)
}
