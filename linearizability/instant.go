package linearizability

import "time"

// Instant is an event on a Recorder's timeline: the call or the return of
// operations recorded later with [Recorder.Add], or the bounds of a fault
// ([Recorder.FaultAt]). Several operations may share one. Each Instant
// gets its timestamp when a history is built, so one placed at a past
// clock reading ([Recorder.At]) still goes before the events recorded
// after that reading.
//
// An Instant belongs to the Recorder that took it. The zero Instant is no
// event, and may not be recorded.
type Instant struct {
	ev event
	t  time.Time
}

// Time returns the clock reading the instant was taken at; the zero time
// for the zero Instant.
func (i Instant) Time() time.Time { return i.t }

// Place says where an event known only by its clock reading goes among the
// other events of that reading. Under testing/synctest many events share
// one (time stands still while goroutines run), and which of them come
// first is what the checker needs to know.
type Place uint8

const (
	// First puts the event before every other event of its reading:
	// something that happened as the instant began, such as a session
	// expired by a server's timer before the goroutines that time woke
	// ran.
	First Place = iota
	// Last puts the event after every other event of its reading: a
	// client's return that the caller only learns of later, knowing that
	// it came after everything the caller did at that instant.
	Last
)

// Now records that an event happens now, after every event recorded before
// it, and returns its instant.
func (r *Recorder) Now() Instant {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.timeline.now(r.sinceStart())
	return Instant{ev: e, t: r.start.Add(e.at)}
}

// At records an event that happened at clock reading t, before or after
// every other event of that reading as p says, and returns its instant.
// Events placed at the same reading and place tie: neither is known to
// have come first, and they get the same timestamp.
func (r *Recorder) At(t time.Time, p Place) Instant {
	rank := rankFirst
	if p == Last {
		rank = rankLast
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return Instant{ev: r.timeline.place(t.Sub(r.start), rank), t: t}
}

// Reading returns the clock reading of the event a timestamp of the
// recorder's history stands for: for one placed between events (an
// observed operation, a fault), the reading of the latest event before
// it. It turns a history back into the caller's own time, such as the
// step of a test an operation belongs to.
func (r *Recorder) Reading(stamp int64) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timeline.resolve()
	return r.start.Add(r.timeline.reading(stamp))
}
