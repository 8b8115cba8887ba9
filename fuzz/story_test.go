package fuzz

import (
	"testing"
	"time"

	"github.com/zksim/zksim/zkfake"
)

// TestSessionEndTold checks that a session its client closed is told as
// closed, not expired: the history records both as a SessionExpiry, the
// server's log tells them apart.
func TestSessionEndTold(t *testing.T) {
	srv := zkfake.NewServer()
	defer srv.Close()
	closed, _, err := srv.Connect(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	expired, _, err := srv.Connect(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	srv.Expire(expired.SessionID())
	h := &harness{srv: srv}
	if got := h.endedHow(closed.SessionID()); got != "been closed" {
		t.Errorf("a closed session had %q, want %q", got, "been closed")
	}
	if got := h.endedHow(expired.SessionID()); got != "expired" {
		t.Errorf("an expired session had %q, want %q", got, "expired")
	}
}

// TestActionsNumberClientsFromZero checks that rapid's account of a
// case's actions numbers clients as the story does, from 0.
func TestActionsNumberClientsFromZero(t *testing.T) {
	if got := (action{kind: actMove, client: 0}).GoString(); got != "client 0 moves" {
		t.Errorf("rapid's account of a move of the first client is %q, want %q", got, "client 0 moves")
	}
}
