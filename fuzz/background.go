package fuzz

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
)

// This file tells a recipe's background work from the calls its waiter
// makes. A recipe may keep goroutines of its own beside the call the
// harness made — a keep-alive, a lease renewal, a search for a node left
// by a lost reply, a delete retried until it goes through — and their
// calls come on timers with nothing changed on the server, as a poller's
// would. They are the recipe's design, not a waiter that polls: the poll
// detector counts the waiter's calls alone.
//
// In process the gate sees which goroutine makes a call. Calls made on
// the client loop's goroutine, which calls the op, are the waiter's, and
// so is the first call of any other goroutine: a recipe that hands each
// call to a goroutine of its own, to bound it by a context as
// recipe.Mutex does, still has its calls counted. A goroutine's second
// call and later ones are background work, and so are the calls of a
// timer's callback (time.AfterFunc): a goroutine that calls again and
// again outlives the call it was made for. The cost is reach: a recipe
// whose waiting loop runs on a goroutine of its own, not on the caller's,
// is held to the poll rule by that loop's first call alone. Over real
// clients a call reaches the gate as a frame, with no goroutine, and
// every call counts.

// markLoop notes, on the client loop's goroutine, how to know it again.
func (inc *incarnation) markLoop() {
	inc.loopStart.Store(goroutineStart(callersOf()))
	id, _ := thisGoroutine()
	inc.loopID.Store(id)
}

// goroutineStart returns the entry of the function the goroutine whose
// stack callers is started with, or 0 if the stack was cut short.
func goroutineStart(callers []uintptr) uintptr {
	if len(callers) < 2 || len(callers) == cap(callers) {
		return 0
	}
	// callers[len-1] is runtime.goexit, under the start function. A
	// function inlined into the start function has the start
	// function's entry.
	if f := runtime.FuncForPC(callers[len(callers)-2]); f != nil {
		return f.Entry()
	}
	return 0
}

// inBackground reports whether an in-process call, made from callers on
// the calling goroutine, is the recipe's background work (see above),
// and remembers the goroutine for its next call.
func (inc *incarnation) inBackground(callers []uintptr) bool {
	if start := goroutineStart(callers); start != 0 && start == inc.loopStart.Load() {
		return false
	}
	id, timer := thisGoroutine()
	if id == inc.loopID.Load() {
		return false // its stack was too deep to see where it started
	}
	if timer {
		return true
	}
	inc.mu.Lock()
	defer inc.mu.Unlock()
	if inc.calledBefore == nil {
		inc.calledBefore = map[uint64]bool{}
	}
	again := inc.calledBefore[id]
	inc.calledBefore[id] = true
	return again
}

// stackBuffers keeps the buffers thisGoroutine reads stacks into.
var stackBuffers = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// thisGoroutine returns the calling goroutine's id, which Go gives out
// once, and whether a timer started it (time.AfterFunc's callbacks). The
// runtime tells both in the stack it prints, and nowhere else.
func thisGoroutine() (id uint64, timer bool) {
	buf := stackBuffers.Get().(*[]byte)
	defer stackBuffers.Put(buf)
	stack := (*buf)[:runtime.Stack(*buf, false)]
	header, _, _ := bytes.Cut(bytes.TrimPrefix(stack, []byte("goroutine ")), []byte(" "))
	id, _ = strconv.ParseUint(string(header), 10, 64)
	return id, bytes.Contains(stack, []byte("\ncreated by time.goFunc"))
}
