package recipe_test

import (
	"slices"
	"sync"

	"github.com/zksim/zksim/zkfake/zktest"
)

// countingConn is a zktest.CountingConn that also remembers which paths it
// set watches on, so tests and benchmarks can measure a recipe's traffic
// and know when a waiter is watching.
type countingConn struct {
	*zktest.CountingConn

	mu      sync.Mutex
	watched []string // paths of watches set, in order
	kinds   []string // the op that set each of them: exists, getData, getChildren
}

func countRequests(conn zktest.Conn) *countingConn {
	c := &countingConn{CountingConn: zktest.NewCountingConn(conn)}
	c.OnWatch = func(op, path string) {
		c.mu.Lock()
		c.watched = append(c.watched, path)
		c.kinds = append(c.kinds, op)
		c.mu.Unlock()
	}
	return c
}

// watches returns the paths watches were set on so far.
func (c *countingConn) watches() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.watched)
}

// watching reports whether a watch has been set on path.
func (c *countingConn) watching(path string) bool {
	return slices.Contains(c.watches(), path)
}

// lastWatch returns the op and path of the last watch set, or "" and "".
func (c *countingConn) lastWatch() (op, path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.watched) == 0 {
		return "", ""
	}
	return c.kinds[len(c.kinds)-1], c.watched[len(c.watched)-1]
}
