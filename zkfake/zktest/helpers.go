package zktest

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// OpenACL is the ACL that lets anyone do anything (world:anyone, every
// permission), as zk.WorldACL(zk.PermAll) makes it: what the suite, the
// harnesses and the benchmarks create their nodes with. Do not modify it.
var OpenACL = zk.WorldACL(zk.PermAll)

// eventWait bounds every wait for an event that must come. On the fake the
// clock is virtual, so the bound costs nothing there.
const eventWait = 10 * time.Second

// quietPeriod is how long a scenario watches a channel to conclude that no
// event is coming. A real server delivers within milliseconds on loopback;
// on the fake the wait is virtual.
func quietPeriod(env Env) time.Duration {
	if env.Real() {
		return 300 * time.Millisecond
	}
	return time.Second
}

func create(t testing.TB, c Conn, path string, data []byte, flags int32) string {
	t.Helper()
	got, err := c.Create(path, data, flags, OpenACL)
	if err != nil {
		t.Fatalf("Create(%q, flags=%d) = %v", path, flags, err)
	}
	return got
}

func stat(t testing.TB, c Conn, path string) zk.Stat {
	t.Helper()
	ok, st, err := c.Exists(path)
	if err != nil || !ok {
		t.Fatalf("Exists(%q) = %v, %v; want an existing node", path, ok, err)
	}
	return *st
}

func set(t testing.TB, c Conn, path string, data []byte) zk.Stat {
	t.Helper()
	st, err := c.Set(path, data, -1)
	if err != nil {
		t.Fatalf("Set(%q) = %v", path, err)
	}
	return *st
}

// nextZxid performs a throwaway write and returns its zxid, so a scenario
// can tell how many zxids the operations before it consumed.
func nextZxid(t testing.TB, c Conn, scratch string) int64 {
	t.Helper()
	return set(t, c, scratch, []byte("tick")).Mzxid
}

func wantErr(t testing.TB, what string, got, want error) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: error = %v; want %v", what, describe(got), describe(want))
	}
}

func wantErrIs(t testing.TB, what string, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("%s: error = %v; want an error wrapping %v", what, describe(got), describe(want))
	}
}

func wantErrText(t testing.TB, what string, got error, want string) {
	t.Helper()
	if got == nil || got.Error() != want {
		t.Fatalf("%s: error = %v; want an error reading %q", what, describe(got), want)
	}
}

func describe(err error) string {
	if err == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%q (%T)", err.Error(), err)
}

func wantEqual[T any](t testing.TB, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s = %#v; want %#v", what, got, want)
	}
}

func wantStat(t testing.TB, what string, got *zk.Stat, want zk.Stat) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: Stat is nil; want %+v", what, want)
	}
	if *got != want {
		t.Fatalf("%s:\n got Stat %+v\nwant Stat %+v", what, *got, want)
	}
}

// wantMillisNear checks that a ZooKeeper timestamp (milliseconds since the
// epoch) lies between two clock readings taken by the scenario around the
// operation, with a little slack for the server's own clock.
func wantMillisNear(t testing.TB, what string, ms int64, before, after time.Time) {
	t.Helper()
	const slack = 2000
	if ms < before.UnixMilli()-slack || ms > after.UnixMilli()+slack {
		t.Fatalf("%s = %d; want milliseconds since the epoch between %d and %d", what, ms, before.UnixMilli(), after.UnixMilli())
	}
}

// waitEvent returns the next event on ch, failing if none comes in time or
// the channel is closed.
func waitEvent(t testing.TB, what string, ch <-chan zk.Event) zk.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatalf("%s: channel closed; want an event", what)
		}
		return ev
	case <-time.After(eventWait):
		t.Fatalf("%s: no event within %v", what, eventWait)
	}
	panic("unreachable")
}

// wantEvent waits for the next event on a watch channel and compares it
// whole, then checks the channel is closed: a watch fires once.
func wantEvent(t testing.TB, what string, ch <-chan zk.Event, want zk.Event) {
	t.Helper()
	got := waitEvent(t, what, ch)
	if got != want {
		t.Fatalf("%s: event %+v; want %+v", what, got, want)
	}
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("%s: second event %+v on a one-shot watch", what, ev)
		}
	case <-time.After(eventWait):
		t.Fatalf("%s: watch channel not closed after its event", what)
	}
}

// wantNoEvent fails if anything arrives on ch within the quiet period.
func wantNoEvent(t testing.TB, env Env, what string, ch <-chan zk.Event) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("%s: unexpected event %+v", what, ev)
		}
		t.Fatalf("%s: channel closed unexpectedly", what)
	case <-time.After(quietPeriod(env)):
	}
}

// drain discards the events already queued on a session's event channel.
func drain(ch <-chan zk.Event) {
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

// waitState reads a session's event channel until a session event with the
// given state arrives, returning every event read before it.
func waitState(t testing.TB, what string, ch <-chan zk.Event, state zk.State) []zk.Event {
	t.Helper()
	var seen []zk.Event
	deadline := time.After(eventWait + 10*time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("%s: event channel closed before %v; saw %+v", what, state, seen)
			}
			if ev.Type == zk.EventSession && ev.State == state {
				return seen
			}
			seen = append(seen, ev)
		case <-deadline:
			t.Fatalf("%s: no %v; saw %+v", what, state, seen)
		}
	}
}

// watchEvent is what go-zookeeper delivers for a fired watch: the server's
// SyncConnected state, no error, no server name.
func watchEvent(typ zk.EventType, path string) zk.Event {
	return zk.Event{Type: typ, State: zk.StateSyncConnected, Path: path}
}
