package zkfake_test

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
)

var open = zk.WorldACL(zk.PermAll)

// connect opens a session and consumes its connection events.
func connect(t *testing.T, srv *zkfake.Server, timeout time.Duration) (*zkfake.Conn, <-chan zk.Event) {
	t.Helper()
	c, events, err := srv.Connect(timeout)
	if err != nil {
		t.Fatal(err)
	}
	states(t, events, zk.StateConnecting, zk.StateConnected, zk.StateHasSession)
	return c, events
}

// states reads session events and fails unless they are want, in order.
func states(t *testing.T, events <-chan zk.Event, want ...zk.State) {
	t.Helper()
	for i, w := range want {
		select {
		case ev := <-events:
			if ev.Type != zk.EventSession || ev.State != w {
				t.Fatalf("event %d: got %v/%v, want session event %v", i, ev.Type, ev.State, w)
			}
		default:
			t.Fatalf("event %d: none, want %v", i, w)
		}
	}
}

func mustCreate(t *testing.T, c *zkfake.Conn, path string, flags int32) string {
	t.Helper()
	p, err := c.Create(path, nil, flags, open)
	if err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
	return p
}

func exists(t *testing.T, c *zkfake.Conn, path string) bool {
	t.Helper()
	ok, _, err := c.Exists(path)
	if err != nil {
		t.Fatalf("exists %s: %v", path, err)
	}
	return ok
}

func TestPartitionHealedBeforeNoticeIsInvisible(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer()
		c, events := connect(t, srv, 30*time.Second)
		c.Partition()
		done := make(chan error)
		go func() {
			_, err := c.Create("/during", nil, 0, open)
			done <- err
		}()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("create returned %v during the partition", err)
		default:
		}
		c.Heal()
		if err := <-done; err != nil {
			t.Fatalf("create after heal: %v", err)
		}
		if len(events) != 0 {
			t.Fatalf("client saw %d events for a partition it never noticed", len(events))
		}
	})
}

func TestPartitionWithinTimeoutKeepsSessionAndReplaysMissedEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer()
		c, events := connect(t, srv, 30*time.Second)
		other, _ := connect(t, srv, 30*time.Second)
		id := c.SessionID()
		eph := mustCreate(t, c, "/eph", zk.FlagEphemeral)
		mustCreate(t, other, "/watched", 0)
		_, _, dataWatch, err := c.GetW("/watched")
		if err != nil {
			t.Fatal(err)
		}
		_, _, existWatch, err := c.ExistsW("/later")
		if err != nil {
			t.Fatal(err)
		}

		c.Partition()
		time.Sleep(20*time.Second + time.Millisecond) // past 2/3 of the timeout: the client notices
		states(t, events, zk.StateDisconnected, zk.StateConnecting)
		// A call while disconnected fails at the next reconnect round.
		if _, err := c.Create("/x", nil, 0, open); err != zk.ErrNoServer {
			t.Fatalf("create while disconnected: got %v, want ErrNoServer", err)
		}
		if _, err := other.Set("/watched", []byte("v2"), -1); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, other, "/later", 0)
		c.Heal()
		time.Sleep(time.Second + time.Millisecond) // past the next reconnect attempt
		if c.SessionID() != id {
			t.Fatalf("session id changed from %#x to %#x", id, c.SessionID())
		}
		if !exists(t, other, eph) {
			t.Fatalf("ephemeral %s gone after a partition within the timeout", eph)
		}
		for name, ch := range map[string]<-chan zk.Event{"data": dataWatch, "exist": existWatch} {
			select {
			case ev := <-ch:
				want := map[string]zk.EventType{"data": zk.EventNodeDataChanged, "exist": zk.EventNodeCreated}[name]
				if ev.Type != want {
					t.Errorf("%s watch: got %v, want %v", name, ev.Type, want)
				}
			default:
				t.Errorf("%s watch: the missed event was not replayed on reconnect", name)
			}
		}
	})
}

func TestPartitionPastTimeoutExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer()
		var mu sync.Mutex
		var seen []zk.State
		c, _, err := srv.Connect(30*time.Second, zkfake.WithEventCallback(func(ev zk.Event) {
			mu.Lock()
			defer mu.Unlock()
			if ev.Type == zk.EventSession {
				seen = append(seen, ev.State)
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		other, _ := connect(t, srv, 30*time.Second)
		old := c.SessionID()
		eph := mustCreate(t, c, "/eph", zk.FlagEphemeral)
		_, _, ownWatch, err := c.GetW(eph)
		if err != nil {
			t.Fatal(err)
		}
		_, _, otherWatch, err := other.ExistsW(eph)
		if err != nil {
			t.Fatal(err)
		}
		c.Partition()
		time.Sleep(31 * time.Second)
		if exists(t, other, eph) {
			t.Fatal("ephemeral survived its session's expiry")
		}
		if ev := <-otherWatch; ev.Type != zk.EventNodeDeleted {
			t.Fatalf("other's watch: got %v, want NodeDeleted", ev.Type)
		}
		c.Heal()
		time.Sleep(time.Second + time.Millisecond)
		ev := <-ownWatch
		if ev.Type != zk.EventNotWatching || ev.Err != zk.ErrSessionExpired {
			t.Fatalf("own watch: got %v/%v, want EventNotWatching/ErrSessionExpired", ev.Type, ev.Err)
		}
		if c.SessionID() == old || c.SessionID() == 0 {
			t.Fatalf("session id after expiry: %#x (old %#x)", c.SessionID(), old)
		}
		if c.State() != zk.StateHasSession {
			t.Fatalf("state after expiry: %v", c.State())
		}
		mu.Lock()
		defer mu.Unlock()
		if !containsInOrder(seen, zk.StateDisconnected, zk.StateExpired, zk.StateHasSession) {
			t.Fatalf("session events %v lack Disconnected, Expired, HasSession in order", seen)
		}
	})
}

func containsInOrder(got []zk.State, want ...zk.State) bool {
	i := 0
	for _, s := range got {
		if i < len(want) && s == want[i] {
			i++
		}
	}
	return i == len(want)
}

func TestExpireConnectedClientLearnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer()
		c, events := connect(t, srv, 10*time.Second)
		old := c.SessionID()
		mustCreate(t, c, "/e", zk.FlagEphemeral)
		if !srv.Expire(old) {
			t.Fatal("Expire found no session")
		}
		states(t, events, zk.StateDisconnected, zk.StateConnecting, zk.StateConnected, zk.StateExpired)
		if c.SessionID() == old {
			t.Fatal("same session id after expiry")
		}
		if exists(t, c, "/e") {
			t.Fatal("ephemeral survived expiry")
		}
		if srv.Expire(old) {
			t.Fatal("an expired session expired twice")
		}
	})
}

func TestCrashReleasesBlockedCallsAndExpiresLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer()
		c, events := connect(t, srv, 10*time.Second)
		other, _ := connect(t, srv, 10*time.Second)
		eph := mustCreate(t, c, "/eph", zk.FlagEphemeral)
		_, _, watch, err := c.ExistsW("/never")
		if err != nil {
			t.Fatal(err)
		}
		c.Partition()
		blocked := make(chan error)
		go func() {
			_, err := c.Create("/blocked", nil, 0, open)
			blocked <- err
		}()
		synctest.Wait()
		c.Crash()
		if err := <-blocked; err != zk.ErrConnectionClosed {
			t.Fatalf("blocked call after crash: %v", err)
		}
		if ev := <-watch; ev.Type != zk.EventNotWatching {
			t.Fatalf("watch after crash: %v", ev.Type)
		}
		for range events {
		} // the channel is closed
		if _, err := c.Create("/after", nil, 0, open); err != zk.ErrConnectionClosed {
			t.Fatalf("call after crash: %v", err)
		}
		if !exists(t, other, eph) {
			t.Fatal("ephemeral gone before the session timed out")
		}
		time.Sleep(10*time.Second + time.Millisecond)
		if exists(t, other, eph) {
			t.Fatal("crashed client's ephemeral outlived its session timeout")
		}
	})
}

func TestLostReplies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer()
		c, events := connect(t, srv, 10*time.Second)
		id := c.SessionID()
		remove := srv.LoseReplies(zkfake.ReplyLoss{Op: "create", PathPrefix: "/ghost", Applied: true})
		if _, err := c.Create("/ghost", nil, zk.FlagEphemeral, open); err != zk.ErrConnectionClosed {
			t.Fatalf("create with lost reply: %v", err)
		}
		remove()
		states(t, events, zk.StateDisconnected, zk.StateConnecting, zk.StateConnected, zk.StateHasSession)
		if !exists(t, c, "/ghost") {
			t.Fatal("a reply lost after applying left no node")
		}
		if c.SessionID() != id {
			t.Fatal("a lost reply changed the session")
		}
		srv.LoseReplies(zkfake.ReplyLoss{Op: "create", Nth: 2})
		mustCreate(t, c, "/first", 0)
		if _, err := c.Create("/second", nil, 0, open); err != zk.ErrConnectionClosed {
			t.Fatalf("second create: %v", err)
		}
		if exists(t, c, "/second") {
			t.Fatal("a request lost before applying was applied")
		}
		mustCreate(t, c, "/third", 0)
	})
}

func TestPauseOutlivingSessionIsNoticedOnResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer()
		c, events := connect(t, srv, 10*time.Second)
		old := c.SessionID()
		c.Pause()
		time.Sleep(time.Minute)
		if len(events) != 0 {
			t.Fatal("a paused client saw events")
		}
		if len(srv.Sessions()) != 0 {
			t.Fatalf("sessions after the pause: %v", srv.Sessions())
		}
		c.Resume()
		states(t, events, zk.StateDisconnected, zk.StateConnecting, zk.StateConnected, zk.StateExpired)
		if c.SessionID() == old {
			t.Fatal("same session after expiry")
		}
	})
}

func TestCloseEndsWatchesAndCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer()
		c, events := connect(t, srv, 10*time.Second)
		other, _ := connect(t, srv, 10*time.Second)
		eph := mustCreate(t, c, "/eph", zk.FlagEphemeral)
		_, _, otherWatch, _ := other.GetW(eph)
		mustCreate(t, c, "/quiet", 0)
		_, _, own, _ := c.ChildrenW("/quiet")
		c.Close()
		if ev := <-own; ev.Type != zk.EventNotWatching || ev.Err != zk.ErrClosing {
			t.Fatalf("own watch after close: %v/%v", ev.Type, ev.Err)
		}
		if ev := <-otherWatch; ev.Type != zk.EventNodeDeleted {
			t.Fatalf("other's watch after close: %v", ev.Type)
		}
		states(t, events, zk.StateDisconnected)
		if _, _, err := c.Get("/"); !errors.Is(err, zk.ErrConnectionClosed) {
			t.Fatalf("get after close: %v", err)
		}
	})
}

func TestContainerAndTTLReapedInVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer()
		c, _ := connect(t, srv, 10*time.Second)
		if _, err := c.CreateContainer("/box", nil, zk.FlagContainer, open); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CreateTTL("/ttl", nil, zk.FlagTTL, open, 90*time.Second); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2*time.Minute + time.Millisecond)
		if !exists(t, c, "/box") {
			t.Fatal("a container that never had a child was reaped")
		}
		if exists(t, c, "/ttl") {
			t.Fatal("a TTL node outlived its TTL")
		}
		mustCreate(t, c, "/box/child", 0)
		if err := c.Delete("/box/child", -1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute + time.Millisecond)
		if exists(t, c, "/box") {
			t.Fatal("an emptied container was not reaped")
		}
	})
}

func TestEventsSentDuringAnUnnoticedPartitionArriveOnHeal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer()
		a, _ := connect(t, srv, 30*time.Second)
		b, _ := connect(t, srv, 30*time.Second)
		mustCreate(t, b, "/x", 0)
		_, _, watch, err := a.GetW("/x")
		if err != nil {
			t.Fatal(err)
		}
		a.Partition()
		if err := b.Delete("/x", -1); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-watch:
			t.Fatalf("event %v crossed a partition", ev.Type)
		default:
		}
		a.Heal()
		select {
		case ev := <-watch:
			if ev.Type != zk.EventNodeDeleted {
				t.Fatalf("after heal: %v, want NodeDeleted", ev.Type)
			}
		default:
			t.Fatal("the event sent during the partition was lost on heal")
		}
	})
}

func TestCrashedClientReportsNoSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer()
		c, _ := connect(t, srv, 10*time.Second)
		c.Crash()
		if c.State() != zk.StateDisconnected {
			t.Fatalf("state after crash: %v", c.State())
		}
	})
}

func TestRequestInFlightGoesWithItsConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer()
		c, _ := connect(t, srv, 10*time.Second)
		c.Partition()
		done := make(chan error)
		go func() {
			_, err := c.Create("/in-flight", nil, 0, open)
			done <- err
		}()
		synctest.Wait()
		srv.Expire(c.SessionID()) // the server gives up on the session meanwhile
		c.Heal()                  // the client learns of it and starts a new session
		if err := <-done; err != zk.ErrConnectionClosed {
			t.Fatalf("request sent on the old connection: %v, want ErrConnectionClosed", err)
		}
		if exists(t, c, "/in-flight") {
			t.Fatal("a request of the dropped connection ran on the new session")
		}
	})
}

// Requests on the wire when a partition heals arrive in the order they were
// sent, as a connection delivers them, and so do requests queued while the
// client reconnects: the server applies them in that order, whatever order
// the Go scheduler wakes their goroutines in.
func TestWaitingRequestsApplyInTheOrderMade(t *testing.T) {
	for _, noticed := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			srv := zkfake.NewServer()
			defer srv.Close()
			c, _ := connect(t, srv, 30*time.Second)
			mustCreate(t, c, "/x", 0)
			c.Partition()
			if noticed {
				time.Sleep(20500 * time.Millisecond) // past two thirds of the timeout: the client noticed, and dials in vain each second
			}
			const writes = 20
			done := make(chan error, writes)
			for i := range writes {
				go func() {
					_, err := c.Set("/x", []byte{byte(i)}, -1)
					done <- err
				}()
				synctest.Wait() // each is made before the next
			}
			c.Heal()
			for range writes {
				if err := <-done; err != nil {
					t.Fatalf("set after heal (noticed %v): %v", noticed, err)
				}
			}
			data, st, err := c.Get("/x")
			if err != nil {
				t.Fatal(err)
			}
			if data[0] != writes-1 || st.Version != writes {
				t.Fatalf("noticed %v: /x holds %d at version %d, want the last write, %d, at version %d", noticed, data[0], st.Version, writes-1, writes)
			}
		})
	}
}
