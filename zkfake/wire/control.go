package wire

import (
	"fmt"
)

// The Listener's own faults: what happens between a client and the
// listener, which the fake's Conn (a session inside this process) does not
// see. The fake's server-side faults (Expire, LoseReplies, StopMember...)
// reach wire clients as they are.

// Drop closes the connection of the session's client, as a network blip
// would: the client reconnects, with its session, at its own pace.
func (l *Listener) Drop(sessionID int64) error {
	s, err := l.session(sessionID)
	if err != nil {
		return err
	}
	s.mu.Lock()
	cc := s.cc
	s.mu.Unlock()
	if cc != nil {
		cc.close()
	}
	return nil
}

// Partition cuts the session's client off: its connection drops and its
// attempts to reconnect with the session are closed unanswered until Heal,
// as if no server answered. The session expires if Heal does not come
// within its timeout, as on a real server, and the client learns of it
// once healed.
func (l *Listener) Partition(sessionID int64) error {
	s, err := l.session(sessionID)
	if err != nil {
		return err
	}
	// The flag is set before the session's connection is read under its
	// lock, where attach checks it: a client reconnecting meanwhile is
	// either refused or dropped here.
	s.mu.Lock()
	if s.dead {
		s.mu.Unlock()
		return notFound{fmt.Errorf("no session %#x on this listener", sessionID)}
	}
	l.mu.Lock()
	l.partitioned[sessionID] = true
	l.mu.Unlock()
	cc := s.cc
	s.mu.Unlock()
	if cc != nil {
		cc.close()
	}
	return nil
}

// Heal ends the session's partition; its client gets through at its next
// attempt.
func (l *Listener) Heal(sessionID int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.partitioned[sessionID] {
		return notFound{fmt.Errorf("session %#x is not partitioned", sessionID)}
	}
	delete(l.partitioned, sessionID)
	return nil
}

// isPartitioned reports whether a reconnect with the session is refused.
func (l *Listener) isPartitioned(sessionID int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.partitioned[sessionID]
}

func (l *Listener) session(id int64) (*session, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.sessions[id]
	if s == nil {
		return nil, notFound{fmt.Errorf("no session %#x on this listener", id)}
	}
	return s, nil
}

// Reset ends every session the listener serves (their clients see their
// connection close, then learn at their reconnect that the session has
// expired), ends the partitions, and resets the fake server
// (zkfake.Server.Reset): a fresh tree whatever its ACLs, every member up,
// no reply losses. Zxids go on from where they were.
func (l *Listener) Reset() {
	for _, s := range l.liveSessions() {
		s.end(true)
	}
	l.mu.Lock()
	clear(l.partitioned)
	l.mu.Unlock()
	l.srv.Reset()
}
