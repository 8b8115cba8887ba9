package fuzz

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zksim/zksim/zkfake"

	"pgregory.net/rapid"
)

// storiesOf runs cases of target (seed 42) and returns each case's result.
func storiesOf(t *testing.T, target Target, cases int, opts ...Option) []*caseResult {
	t.Helper()
	cfg := Config{}
	for _, o := range opts {
		o(&cfg)
	}
	e := newEngine(target.subject(), cfg.normalized())
	e.countOnly = true
	var results []*caseResult
	e.onCase = func(c *caseResult) {
		c.story()
		results = append(results, c)
	}
	withRapid(t, cases, 42, func() { rapid.Check(t, e.property) })
	return results
}

// TestStoryNumbersClientsFromZero checks that the story numbers clients
// as Recipe.New and the histories (porcupine's rows) do, from 0: with two
// clients the story tells of client 0 and client 1, never of client 2.
func TestStoryNumbersClientsFromZero(t *testing.T) {
	seen0 := false
	for _, c := range storiesOf(t, Lock(soundQueueLock), 20, WithClients(2)) {
		s := c.story()
		if strings.Contains(s, "client 2") {
			t.Fatalf("a case of two clients tells of client 2:\n%s", s)
		}
		seen0 = seen0 || strings.Contains(s, "client 0")
	}
	if !seen0 {
		t.Fatal("no story tells of client 0")
	}
	if got := (action{kind: actMove, client: 0}).GoString(); got != "client 0 moves" {
		t.Errorf("rapid's account of a move of the first client is %q, want %q", got, "client 0 moves")
	}
}

// TestStoryNamesRestartsOneWay checks that a process that crashes, or
// ends with its Conn closed, is told to restart as the process the rest
// of the story names: "client N (restart M)".
func TestStoryNamesRestartsOneWay(t *testing.T) {
	restarts := 0
	for _, c := range storiesOf(t, Lock(soundQueueLock), 40) {
		s := c.story()
		for _, old := range []string{"a new process", "(restarted)", "incarnation"} {
			if strings.Contains(s, old) {
				t.Fatalf("the story tells a restart as %q:\n%s", old, s)
			}
		}
		for _, line := range strings.Split(s, "\n") {
			if strings.Contains(line, "process crashes") || strings.Contains(line, "its Conn closed, ends") {
				restarts++
				if !regexp.MustCompile(`restarts as client \d+ \(restart \d+\)`).MatchString(line) {
					t.Fatalf("a restart is told without the name of the process that takes over: %s", line)
				}
			}
		}
	}
	if restarts == 0 {
		t.Fatal("no story tells a restart")
	}
}

// TestStoryLeavesOutHarnessSessions checks that the sessions the harness
// opens for itself (to make the lock's directory, to delete a client's
// node, to read the server for a Recipe's checks) are not told as if they
// were a client's.
func TestStoryLeavesOutHarnessSessions(t *testing.T) {
	unnamed := regexp.MustCompile(`session 0x[0-9a-f]+('s| is notified| reconnects)|own session's`)
	for name, target := range map[string]Target{"lock": Lock(soundQueueLock), "semaphore": Semaphore(RecipeSemaphore)} {
		for _, c := range storiesOf(t, target, 20) {
			if m := unnamed.FindString(c.story()); m != "" {
				t.Fatalf("%s: the story tells a session that is no client's as if it were one (%q):\n%s", name, m, c.story())
			}
		}
	}
}

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
