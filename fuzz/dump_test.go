package fuzz_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zksim/zksim/fuzz"
)

// TestDumpHistories writes, for a refactoring to be checked against, what
// 150 cases of seed 42 did for every built-in target and mutant: each
// case's recorded history and the server's event log (histories.txt) and
// its story (stories.txt), one directory per target, in the directory
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
	all := map[string]fuzz.Target{}
	for name, target := range builtins() {
		all[strings.NewReplacer(" ", "-", ".", "-").Replace(strings.ToLower(name))] = target
	}
	for _, m := range withExamples() {
		all[m.Name] = m.Target
	}
	for name, target := range all {
		t.Run(name, func(t *testing.T) {
			var histories, stories strings.Builder
			for i, r := range fuzz.Records(t, target, nil, 150, 42) {
				fmt.Fprintf(&histories, "=== case %d: %s", i+1, r.History)
				fmt.Fprintf(&stories, "=== case %d\n%s\n", i+1, r.Story)
			}
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
