package fuzz

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestDumpHistories writes, for a refactoring to be checked against, what
// 150 cases of seed 42 did for every built-in target and mutant: each
// case's recorded history and the server's event log (histories.txt) and
// its story (stories.txt), one file pair per target, in the directory
// ZKFUZZ_DUMP names. A change that means to leave behaviour alone leaves
// the histories byte for byte as they were:
//
//	ZKFUZZ_DUMP=/tmp/before go test ./fuzz -run TestDumpHistories
//	(change)
//	ZKFUZZ_DUMP=/tmp/after go test ./fuzz -run TestDumpHistories
//	diff -r /tmp/before /tmp/after
func TestDumpHistories(t *testing.T) {
	dir := os.Getenv("ZKFUZZ_DUMP")
	if dir == "" {
		t.Skip("set ZKFUZZ_DUMP to the directory to write the histories to")
	}
	targets := map[string]Target{"sound-queue-lock": Lock(soundQueueLock), "recipe-mutex": Lock(RecipeMutex), "recipe-election": Election(RecipeElection), "recipe-rwmutex": RWMutex(RecipeRWMutex), "recipe-semaphore": Semaphore(RecipeSemaphore)}
	for _, m := range withExamples() {
		targets[m.Name] = m.Target
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			var histories, stories strings.Builder
			e := newEngine(target.subject(), Config{}.normalized())
			e.countOnly = true
			e.onCase = func(c *caseResult) {
				n := e.runs.Load()
				fmt.Fprintf(&histories, "=== case %d: %d steps\n", n, c.steps)
				for _, op := range c.ops {
					fmt.Fprintf(&histories, "%d %s %d..%d %+v -> %+v\n", op.ClientID, op.Tag, op.Call, op.Return, op.Input, op.Output)
				}
				for _, f := range c.faults {
					fmt.Fprintf(&histories, "fault %+v\n", f)
				}
				histories.WriteString(c.eventLog())
				fmt.Fprintf(&stories, "=== case %d\n%s\n", n, c.story())
			}
			withRapid(t, 150, 42, func() { rapid.Check(t, e.property) })
			sub := filepath.Join(dir, name)
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			for file, text := range map[string]string{"histories.txt": histories.String(), "stories.txt": stories.String()} {
				if err := os.WriteFile(filepath.Join(sub, file), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
