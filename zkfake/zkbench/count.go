package zkbench

import (
	"sync"
	"sync/atomic"

	"github.com/zksim/zksim/zkfake/zktest"
)

// countRequests wraps conn so that it counts its requests into ops, a
// counter several connections may share, and, if onPark is set, calls it
// for every data watch set with GetW on a node the connection did not
// create: what a lock waiter does to park on its predecessor (the GetW on
// its own node arms the watch behind Mutex.Lost).
func countRequests(conn zktest.Conn, ops *atomic.Int64, onPark func()) *zktest.CountingConn {
	c := zktest.CountRequests(conn, ops)
	if onPark == nil {
		return c
	}
	var mu sync.Mutex
	own := map[string]bool{} // nodes this connection created
	c.OnCreate = func(path string) {
		mu.Lock()
		defer mu.Unlock()
		own[path] = true
	}
	c.OnWatch = func(op, path string) {
		mu.Lock()
		mine := own[path]
		mu.Unlock()
		if op == "getData" && !mine {
			onPark()
		}
	}
	return c
}
