package fuzz_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/fuzz/targets"
)

// storiesOf runs cases of target (seed 42) and returns each case's story.
func storiesOf(t *testing.T, target fuzz.Target, cases int, opts ...fuzz.Option) []string {
	t.Helper()
	var stories []string
	for _, r := range fuzz.Records(t, target, opts, cases, 42) {
		stories = append(stories, r.Story)
	}
	return stories
}

// TestStoryNumbersClientsFromZero checks that the story numbers clients
// as Recipe.New and the histories (porcupine's rows) do, from 0: with two
// clients the story tells of client 0 and client 1, never of client 2.
func TestStoryNumbersClientsFromZero(t *testing.T) {
	seen0 := false
	for _, s := range storiesOf(t, fuzz.Lock(targets.NewQueueLock), 20, fuzz.WithClients(2)) {
		if strings.Contains(s, "client 2") {
			t.Fatalf("a case of two clients tells of client 2:\n%s", s)
		}
		seen0 = seen0 || strings.Contains(s, "client 0")
	}
	if !seen0 {
		t.Fatal("no story tells of client 0")
	}
}

// TestStoryNamesRestartsOneWay checks that a process that crashes, or
// ends with its Conn closed, is told to restart as the process the rest
// of the story names: "client N (restart M)".
func TestStoryNamesRestartsOneWay(t *testing.T) {
	t.Parallel()
	restarts := 0
	for _, s := range storiesOf(t, fuzz.Lock(targets.NewQueueLock), 40) {
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
	t.Parallel()
	unnamed := regexp.MustCompile(`session 0x[0-9a-f]+('s| is notified| reconnects)|own session's`)
	for name, target := range map[string]fuzz.Target{"lock": fuzz.Lock(targets.NewQueueLock), "semaphore": targets.Semaphore(targets.RecipeSemaphore)} {
		for _, s := range storiesOf(t, target, 20) {
			if m := unnamed.FindString(s); m != "" {
				t.Fatalf("%s: the story tells a session that is no client's as if it were one (%q):\n%s", name, m, s)
			}
		}
	}
}

// TestStoryTellsALostExchangeInOrder checks that a lost request or reply
// is told where it happened: right after the request it befell, before
// what the client then saw (its connection closed) and what it did next.
func TestStoryTellsALostExchangeInOrder(t *testing.T) {
	t.Parallel()
	lost := regexp.MustCompile(`^ *· .*(never reaches the server|but the reply is lost)$`)
	request := regexp.MustCompile(`^ *client \d+( \(restart \d+\))?: \S`)
	told := 0
	for _, s := range storiesOf(t, fuzz.Lock(targets.NewQueueLock), 60) {
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			if !lost.MatchString(l) {
				continue
			}
			told++
			if i == 0 || !request.MatchString(lines[i-1]) {
				t.Fatalf("a lost exchange is told after something other than the request it befell:\n%s\n%s", lines[i-1], l)
			}
		}
	}
	if told == 0 {
		t.Fatal("no story tells a lost exchange")
	}
}
