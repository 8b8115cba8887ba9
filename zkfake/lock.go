package zkfake

import (
	"runtime"
	"sync"
)

// serverLock guards the server's state. Writers take every shard; a plain
// read takes the shared side of one shard only, picked by its session, so
// that reads from many goroutines do not all write the same reader count —
// one sync.RWMutex's count, bounced between cores, kept reads from 16
// goroutines from going any faster than from one.
type serverLock struct {
	shards []paddedRWMutex
}

// paddedRWMutex keeps each shard on a cache line of its own.
type paddedRWMutex struct {
	sync.RWMutex
	_ [64 - 24]byte
}

func newServerLock() serverLock {
	n := min(max(runtime.GOMAXPROCS(0), 1), 8)
	return serverLock{shards: make([]paddedRWMutex, n)}
}

// Lock takes every shard, in order.
func (l *serverLock) Lock() {
	for i := range l.shards {
		l.shards[i].Lock()
	}
}

// Unlock releases every shard.
func (l *serverLock) Unlock() {
	for i := len(l.shards) - 1; i >= 0; i-- {
		l.shards[i].Unlock()
	}
}

// RLock takes the shared side of the shard for key.
func (l *serverLock) RLock(key int64) *paddedRWMutex {
	m := &l.shards[uint64(key)%uint64(len(l.shards))]
	m.RLock()
	return m
}
