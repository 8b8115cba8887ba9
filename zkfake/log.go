package zkfake

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// RecordKind tells what a Record of the event log is about.
type RecordKind uint8

const (
	// RecordOp is a request the server answered: a write (with the zxid it
	// took, also when it failed) or a read (with the server's zxid then).
	RecordOp RecordKind = iota + 1
	// RecordSession is a session's change: createSession, closeSession,
	// expireSession, reconnect, expired (the client learning of its
	// expiry), abandonSession (the client giving it up on its own,
	// Conn.AbandonSession).
	RecordSession
	// RecordWatch is a watch event delivered to a session.
	RecordWatch
	// RecordFault is an injected fault or condition: partition, heal,
	// crash, a lost request or reply, a refused oversized packet, a
	// lagging or stopped member, a sequence counter set by SetSequence.
	RecordFault
)

// String names the kind as Record.String shows it.
func (k RecordKind) String() string {
	switch k {
	case RecordOp:
		return "op"
	case RecordSession:
		return "session"
	case RecordWatch:
		return "watch"
	case RecordFault:
		return "fault"
	}
	return "unknown"
}

// Record is one entry of the server's event log: the ground truth of what
// happened, in the order it happened.
type Record struct {
	Seq     int       // position in the log, from 1
	Time    time.Time // when it happened (virtual under synctest)
	Kind    RecordKind
	Session int64
	Zxid    int64
	Op      string // the request, session change, event type or fault
	Path    string
	Input   string  // the request's arguments, rendered
	Result  string  // what the server answered besides a stat: a created path
	Stat    zk.Stat // the stat the server answered with, if any
	Err     error
}

// String renders the record on one line, the same way every time.
func (r Record) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s %s session=%#x zxid=%#x %s", r.Seq, r.Time.UTC().Format("15:04:05.000"), r.Kind, r.Session, r.Zxid, r.Op)
	if r.Path != "" {
		b.WriteString(" " + r.Path)
	}
	if r.Input != "" {
		b.WriteString(" [" + r.Input + "]")
	}
	if r.Result != "" {
		b.WriteString(" -> " + r.Result)
	}
	if r.Stat != (zk.Stat{}) {
		fmt.Fprintf(&b, " stat{czxid=%#x mzxid=%#x pzxid=%#x version=%d cversion=%d aversion=%d owner=%#x len=%d children=%d}",
			r.Stat.Czxid, r.Stat.Mzxid, r.Stat.Pzxid, r.Stat.Version, r.Stat.Cversion, r.Stat.Aversion, r.Stat.EphemeralOwner, r.Stat.DataLength, r.Stat.NumChildren)
	}
	if r.Err != nil {
		b.WriteString(" err=" + r.Err.Error())
	}
	return b.String()
}

// eventLog keeps records in fixed-size chunks, so that a long log grows
// without copying what it already holds.
type eventLog struct {
	clock   clock
	enabled bool
	chunks  [][]Record
	n       int
}

const logChunk = 4096

func (l *eventLog) add(r Record) {
	if !l.enabled {
		return
	}
	if len(l.chunks) == 0 || len(l.chunks[len(l.chunks)-1]) == cap(l.chunks[len(l.chunks)-1]) {
		// Chunks grow from small to logChunk, so that a short-lived
		// server does not pay for a large one.
		size := logChunk
		if l.n < logChunk {
			size = max(64, l.n)
		}
		l.chunks = append(l.chunks, make([]Record, 0, size))
	}
	l.n++
	r.Seq = l.n
	r.Time = l.clock.Now()
	last := &l.chunks[len(l.chunks)-1]
	*last = append(*last, r)
}

// Log returns a copy of the event log so far.
func (s *Server) Log() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Record, 0, s.log.n)
	for _, chunk := range s.log.chunks {
		out = append(out, chunk...)
	}
	return out
}
