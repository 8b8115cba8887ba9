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
// so is the first call of a goroutine the loop's goroutine started: a
// recipe that hands each call to a goroutine of its own, to bound it by a
// context as recipe.Mutex does, still has its calls counted. A
// goroutine's second call and later ones are background work, and so are
// the calls of goroutines that other goroutines started, and of a timer's
// callback (time.AfterFunc): a goroutine that calls again and again
// outlives the call it was made for. The cost is reach: a recipe whose
// waiting loop runs on a goroutine of its own, not on the caller's, is
// held to the poll rule by that loop's first call alone, and one that
// polls through timers not at all. Over real clients a call reaches the
// gate as a frame, with no goroutine, and every call counts.

// markLoop notes, on the client loop's goroutine, how to know it again.
func (inc *incarnation) markLoop() {
	inc.loopStart.Store(goroutineStart(callersOf()))
	inc.loopID.Store(thisGoroutine().id)
}

// goroutineStart returns the entry of the function the goroutine whose
// stack callers is started with, or 0 if the stack was cut short.
func goroutineStart(callers []uintptr) uintptr {
	if len(callers) < 2 || len(callers) == cap(callers) {
		return 0
	}
	// callers[len-1] is runtime.goexit, under the start function. A
	// function inlined into the start function has the start
	// function's entry. (A return address, less one: the call.)
	if f := runtime.FuncForPC(callers[len(callers)-2] - 1); f != nil {
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
	g := thisGoroutine()
	loop := inc.loopID.Load()
	if g.id == loop {
		return false // its stack was too deep to see where it started
	}
	inc.mu.Lock()
	defer inc.mu.Unlock()
	if inc.calledBefore == nil {
		inc.calledBefore = map[uint64]bool{}
	}
	again := inc.calledBefore[g.id]
	inc.calledBefore[g.id] = true
	return again || g.timer || g.creator != loop
}

// stackBuffers keeps the buffers thisGoroutine reads stacks into.
var stackBuffers = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// goroutine is what the runtime tells of one goroutine.
type goroutine struct {
	id      uint64 // Go gives each goroutine its own, once
	creator uint64 // the goroutine that started it (0 if unknown)
	timer   bool   // a timer started it: a time.AfterFunc callback
}

// thisGoroutine returns what the runtime tells of the calling goroutine,
// in the stack it prints and nowhere else: the id in its first line, and
// who started it in its last.
func thisGoroutine() goroutine {
	buf := stackBuffers.Get().(*[]byte)
	defer stackBuffers.Put(buf)
	n := runtime.Stack(*buf, false)
	for n == len(*buf) {
		// Cut short: the last line, which says who started it, is
		// missing.
		*buf = make([]byte, 2*len(*buf))
		n = runtime.Stack(*buf, false)
	}
	return parseStack((*buf)[:n])
}

// parseStack reads a goroutine's printed stack: "goroutine 12 [running]:"
// (with more within the brackets in a synctest bubble) first, and last
// "created by time.goFunc in goroutine 7" and the creator's place.
func parseStack(stack []byte) goroutine {
	var g goroutine
	g.id = leadingNumber(bytes.TrimPrefix(stack, []byte("goroutine ")))
	i := bytes.LastIndex(stack, []byte("\ncreated by "))
	if i < 0 {
		return g
	}
	line, _, _ := bytes.Cut(stack[i+len("\ncreated by "):], []byte("\n"))
	g.timer = bytes.HasPrefix(line, []byte("time.goFunc"))
	if _, creator, ok := bytes.Cut(line, []byte(" in goroutine ")); ok {
		g.creator = leadingNumber(creator)
	}
	return g
}

// leadingNumber reads the decimal number b begins with.
func leadingNumber(b []byte) uint64 {
	end := 0
	for end < len(b) && '0' <= b[end] && b[end] <= '9' {
		end++
	}
	n, _ := strconv.ParseUint(string(b[:end]), 10, 64)
	return n
}
