package zkfake_test

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
)

// A client that gives up its session on its own (Curator's injected
// expiry) hears StateExpired and opens a new session, while the server
// keeps the old one and its ephemeral nodes until it expires it: the new
// session sees the old session's node, about to go, for a whole timeout.
func TestAbandonedSessionLivesOnUntilItExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer()
		defer srv.Close()
		c, events, err := srv.Connect(2 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		old := c.SessionID()
		if _, err := c.Create("/e", nil, zk.FlagEphemeral, open); err != nil {
			t.Fatal(err)
		}
		_, _, watch, err := c.GetW("/e")
		if err != nil {
			t.Fatal(err)
		}
		for len(events) > 0 {
			<-events
		}
		if !c.AbandonSession() {
			t.Fatal("AbandonSession found no session to give up")
		}
		synctest.Wait()
		if ev := <-watch; ev.Err == nil || !errors.Is(ev.Err, zk.ErrSessionExpired) {
			t.Errorf("the old session's watch ended with %v, want %v", ev.Err, zk.ErrSessionExpired)
		}
		var states []zk.State
		for len(events) > 0 {
			states = append(states, (<-events).State)
		}
		if !slices.Contains(states, zk.StateExpired) || states[len(states)-1] != zk.StateHasSession {
			t.Errorf("the client heard %v, want StateExpired and then StateHasSession", states)
		}
		now := c.SessionID()
		if now == 0 || now == old {
			t.Fatalf("session after giving up %#x: want a new one (the old was %#x)", now, old)
		}
		if !slices.Contains(srv.Sessions(), old) {
			t.Fatalf("the server dropped the abandoned session %#x at once; it must keep it until it expires", old)
		}
		ok, stat, err := c.Exists("/e")
		if err != nil || !ok || stat.EphemeralOwner != old {
			t.Fatalf("the new session reads /e as (%v, %+v, %v): want the old session's node", ok, stat, err)
		}
		// The negotiated timeout is at least two ticks.
		time.Sleep(max(2*time.Second, 2*srv.TickTime()) + time.Millisecond)
		if slices.Contains(srv.Sessions(), old) {
			t.Errorf("the abandoned session %#x outlived its timeout", old)
		}
		if ok, _, err := c.Exists("/e"); err != nil || ok {
			t.Errorf("/e after the old session's timeout: (%v, %v), want gone", ok, err)
		}
		if c.SessionID() != now {
			t.Errorf("the old session's expiry changed the client's session to %#x", c.SessionID())
		}
	})
}

// Giving up a session while the client cannot reach the server opens
// the new one when it can; a closed Conn has nothing to give up.
func TestAbandonWhileCutOffAndAfterClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer()
		defer srv.Close()
		c, _, err := srv.Connect(2 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		old := c.SessionID()
		c.Partition()
		if !c.AbandonSession() {
			t.Fatal("AbandonSession refused a cut-off client")
		}
		synctest.Wait()
		if c.SessionID() != 0 {
			t.Fatalf("a cut-off client has session %#x after giving up its own: want none until it reaches the server", c.SessionID())
		}
		c.Heal()
		time.Sleep(1100 * time.Millisecond)
		if id := c.SessionID(); id == 0 || id == old {
			t.Fatalf("after the heal the client has session %#x, want a new one", id)
		}
		c.Close()
		if c.AbandonSession() {
			t.Error("a closed Conn gave up a session")
		}
	})
}
