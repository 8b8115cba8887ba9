package fuzz

import (
	"testing"
	"time"
)

// deep calls f from depth frames further down the stack.
func deep(depth int, f func()) {
	if depth == 0 {
		f()
		return
	}
	deep(depth-1, f)
}

// starter starts goroutines from a method, as `go x.m(arg)` does.
type starter struct{ inc *incarnation }

func (s starter) call(twice bool, out chan<- [2]bool) {
	first := s.inc.inBackground(callersOf())
	out <- [2]bool{first, twice && s.inc.inBackground(callersOf())}
}

// TestWhoseCallIsWhose holds inBackground to its rule (background.go):
// the client loop's calls are the waiter's, shallow or deep; so is the
// first call of a goroutine the loop started, from a closure or a method,
// and not its second; a goroutine another started, and a timer's
// callback, are background work.
func TestWhoseCallIsWhose(t *testing.T) {
	inc := &incarnation{}
	type answer struct {
		what             string
		background, want bool
	}
	var answers []answer
	say := func(what string, background, want bool) { answers = append(answers, answer{what, background, want}) }
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		inc.markLoop()
		for i := range 3 {
			say("a call of the loop", inc.inBackground(callersOf()), false)
			deep(80+i, func() { say("a call of the loop, 80 frames down", inc.inBackground(callersOf()), false) })
		}
		helper := make(chan [2]bool)
		go func() {
			first := inc.inBackground(callersOf())
			helper <- [2]bool{first, inc.inBackground(callersOf())}
			go func() { helper <- [2]bool{inc.inBackground(callersOf())} }()
		}()
		got := <-helper
		say("the first call of a goroutine the loop started", got[0], false)
		say("its second call", got[1], true)
		say("the first call of a goroutine that goroutine started", (<-helper)[0], true)
		go starter{inc}.call(true, helper)
		got = <-helper
		say("the first call of a goroutine the loop started from a method", got[0], false)
		say("its second call", got[1], true)
		timer := make(chan bool)
		time.AfterFunc(0, func() { timer <- inc.inBackground(callersOf()) })
		say("a timer's callback", <-timer, true)
	}()
	<-loopDone
	for _, a := range answers {
		if a.background != a.want {
			t.Errorf("%s: background %v, want %v", a.what, a.background, a.want)
		}
	}
	if len(answers) != 12 {
		t.Fatalf("%d answers, want 12", len(answers))
	}
}

// TestParseStack reads the two lines of a printed stack the rule needs,
// as a synctest bubble prints them.
func TestParseStack(t *testing.T) {
	stack := "goroutine 42 [running, synctest bubble 3]:\n" +
		"github.com/zksim/zksim/fuzz.thisGoroutine()\n\t/src/fuzz/background.go:90 +0x45\n" +
		"created by time.goFunc in goroutine 7\n\t/go/src/time/sleep.go:215 +0x2d\n"
	if g := parseStack([]byte(stack)); g != (goroutine{id: 42, creator: 7, timer: true}) {
		t.Errorf("parseStack(a timer's callback) = %+v", g)
	}
	stack = "goroutine 9 gp=0xc000002380 m=0 mp=0x5f4e40 [running]:\nmain.main()\n\t/x.go:3 +0x1d\n"
	if g := parseStack([]byte(stack)); g != (goroutine{id: 9}) {
		t.Errorf("parseStack(the main goroutine, GOTRACEBACK=system) = %+v", g)
	}
}
