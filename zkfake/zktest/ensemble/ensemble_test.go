package ensemble_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/zktest"
	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

func TestBaseIsFreshAndRemoved(t *testing.T) {
	servers := ensemble.Servers(t)
	target := ensemble.NewTarget(servers)
	var base string
	target.Run(t, "scenario", func(t *testing.T, env zktest.Env) {
		if !env.Real() {
			t.Fatal("Real() = false on a real ensemble")
		}
		base = env.Base()
		c, _ := env.Connect(t, 4*time.Second)
		children, _, err := c.Children(base)
		if err != nil || len(children) != 0 {
			t.Fatalf("Children(base %s) = %v, %v; want an existing, empty node", base, children, err)
		}
		if _, err := c.Create(base+"/p", nil, 0, zktest.OpenACL); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Create(base+"/p/q", nil, 0, zktest.OpenACL); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Create(base+"/e", nil, zk.FlagEphemeral, zktest.OpenACL); err != nil {
			t.Fatal(err)
		}
	})
	check := connect(t, servers)
	if ok, _, err := check.Exists(base); err != nil || ok {
		t.Fatalf("after the scenario, Exists(%s) = %v, %v; want the base removed", base, ok, err)
	}
}

func TestConnectToPinsMember(t *testing.T) {
	servers := ensemble.Servers(t)
	ensemble.NewTarget(servers).Run(t, "pinned", func(t *testing.T, env zktest.Env) {
		e := env.(*ensemble.Env)
		if e.Members() != len(servers) {
			t.Fatalf("Members() = %d; want %d", e.Members(), len(servers))
		}
		c, _ := e.Connect(t, 4*time.Second)
		if got, want := c.Server(), e.Servers()[e.Home()]; got != want {
			t.Errorf("Connect().Server() = %q; want the home member %q", got, want)
		}
		for member, server := range e.Servers() {
			c, _ := e.ConnectTo(t, member, 4*time.Second)
			if got := c.Server(); got != server {
				t.Errorf("ConnectTo(%d).Server() = %q; want %q", member, got, server)
			}
			// Every member sees the base at once: Connect synced with it.
			if ok, _, err := c.Exists(env.Base()); err != nil || !ok {
				t.Errorf("member %d: Exists(base) = %v, %v", member, ok, err)
			}
		}
	})
}

// collect gathers a session's events as they come, so that go-zookeeper's
// six-slot event channel never fills and drops one.
type collect struct {
	events chan zk.Event
}

func collectEvents(ch <-chan zk.Event) *collect {
	c := &collect{events: make(chan zk.Event, 1024)}
	go func() {
		for ev := range ch {
			c.events <- ev
		}
		close(c.events)
	}()
	return c
}

// waitState reads session events until one with the given state.
func (c *collect) waitState(t *testing.T, state zk.State) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	var seen []zk.State
	for {
		select {
		case ev, ok := <-c.events:
			if !ok {
				t.Fatalf("event channel closed waiting for %v; saw %v", state, seen)
			}
			if ev.Type != zk.EventSession {
				continue
			}
			if ev.State == state {
				return
			}
			seen = append(seen, ev.State)
		case <-timeout:
			t.Fatalf("no %v within 30s; saw %v", state, seen)
		}
	}
}

func TestPartitionHealKeepsSession(t *testing.T) {
	servers := ensemble.Servers(t)
	ensemble.NewTarget(servers).Run(t, "partition-heal", func(t *testing.T, env zktest.Env) {
		e := env.(*ensemble.Env)
		a, aEvents := e.Connect(t, 4*time.Second)
		events := collectEvents(aEvents)
		b, _ := e.Connect(t, 4*time.Second)
		eph, err := a.Create(env.Base()+"/e", nil, zk.FlagEphemeral, zktest.OpenACL)
		if err != nil {
			t.Fatal(err)
		}
		session := a.SessionID()

		zktest.Require(t, e.Partition(a))
		events.waitState(t, zk.StateDisconnected)
		if _, _, err := a.Get(eph); err == nil {
			t.Fatal("Get through a partitioned connection succeeded")
		}
		// The other session still works and still sees the ephemeral.
		if _, err := b.Create(env.Base()+"/while-away", nil, 0, zktest.OpenACL); err != nil {
			t.Fatal(err)
		}
		zktest.Require(t, e.Heal(a))
		events.waitState(t, zk.StateHasSession)
		if got := a.SessionID(); got != session {
			t.Fatalf("session after a short partition = %#x; want the same %#x", got, session)
		}
		_, st, err := b.Get(eph)
		if err != nil || st.EphemeralOwner != session {
			t.Fatalf("ephemeral after heal: %+v, %v; want it owned by %#x", st, err, session)
		}
		if ok, _, err := a.Exists(env.Base() + "/while-away"); err != nil || !ok {
			t.Fatalf("healed session does not see a node created meanwhile: %v, %v", ok, err)
		}
	})
}

func TestExpireGivesNewSessionOnSameConn(t *testing.T) {
	servers := ensemble.Servers(t)
	ensemble.NewTarget(servers).Run(t, "expire", func(t *testing.T, env zktest.Env) {
		e := env.(*ensemble.Env)
		a, aEvents := e.Connect(t, time.Second)
		events := collectEvents(aEvents)
		eph, err := a.Create(env.Base()+"/e", nil, zk.FlagEphemeral, zktest.OpenACL)
		if err != nil {
			t.Fatal(err)
		}
		old := a.SessionID()

		zktest.Require(t, e.Expire(a))
		// Expire returns once every member has applied the expiry: a
		// session on any member sees the ephemeral gone.
		for member := range e.Members() {
			c, _ := e.ConnectTo(t, member, 4*time.Second)
			if ok, _, err := c.Exists(eph); err != nil || ok {
				t.Fatalf("member %d after Expire: Exists(ephemeral) = %v, %v; want gone", member, ok, err)
			}
		}
		events.waitState(t, zk.StateExpired)
		events.waitState(t, zk.StateHasSession)
		if id := a.SessionID(); id == old || id == 0 {
			t.Fatalf("session after expiry = %#x; want a new one (old %#x)", id, old)
		}
		again, err := a.Create(env.Base()+"/e", nil, zk.FlagEphemeral, zktest.OpenACL)
		if err != nil {
			t.Fatalf("creating an ephemeral on the new session: %v", err)
		}
		if _, st, err := a.Get(again); err != nil || st.EphemeralOwner != a.SessionID() {
			t.Fatalf("new ephemeral: %+v, %v; want it owned by %#x", st, err, a.SessionID())
		}
	})
}

func TestExpirePinnedAndPartitioned(t *testing.T) {
	servers := ensemble.Servers(t)
	ensemble.NewTarget(servers).Run(t, "expire-partitioned", func(t *testing.T, env zktest.Env) {
		e := env.(*ensemble.Env)
		a, aEvents := e.ConnectTo(t, e.Members()-1, 4*time.Second)
		events := collectEvents(aEvents)
		old := a.SessionID()
		// Expiring a partitioned connection first heals it; it gets its
		// session back, which is then expired.
		zktest.Require(t, e.Partition(a))
		events.waitState(t, zk.StateDisconnected)
		zktest.Require(t, e.Expire(a))
		events.waitState(t, zk.StateExpired)
		events.waitState(t, zk.StateHasSession)
		if id := a.SessionID(); id == old || id == 0 {
			t.Fatalf("session after expiry = %#x; want a new one (old %#x)", id, old)
		}
		if got, want := a.Server(), e.Servers()[e.Members()-1]; got != want {
			t.Fatalf("pinned session moved to %s; want %s", got, want)
		}
	})
}

// After a lost reply go-zookeeper reconnects with the zxid of the last
// reply it read, short of the lost write's: what makes the fake's
// TestLostReplyThenReconnectToALaggingMember possible on ZooKeeper. There
// a member takes a client unless "connReq.getLastZxidSeen() >
// zkDb.dataTree.lastProcessedZxid" (ZooKeeperServer.processConnectRequest,
// 3.8), and a follower answers reads from its own DataTree, stamping each
// reply with its lastProcessedZxid (FinalRequestProcessor). So a follower
// that has not yet applied the write takes the client and lists the parent
// without the node, until it applies the commit. That window cannot be
// held open on demand here — a follower applies a commit within
// milliseconds, and a stopped one resynchronizes with the leader before it
// serves again — so this test checks the client's side: the zxids the
// proxy saw go by.
func TestLostReplyLeavesLastZxidSeen(t *testing.T) {
	servers := ensemble.Servers(t)
	if len(servers) < 2 {
		t.Skip("needs an ensemble of at least two members")
	}
	ensemble.NewTarget(servers).Run(t, "lost-reply", func(t *testing.T, env zktest.Env) {
		e := env.(*ensemble.Env)
		c, cEvents := e.Connect(t, 4*time.Second)
		events := collectEvents(cEvents)
		dir, err := c.Create(env.Base()+"/dir", nil, 0, zktest.OpenACL)
		if err != nil {
			t.Fatal(err)
		}
		before := e.Traffic(t, c)
		if len(before.ConnectZxids) != 1 || before.ReplyZxid == 0 || before.LostZxid != 0 {
			t.Fatalf("traffic of a fresh session: %+v; want one connect and a reply zxid", before)
		}
		from, err := e.MemberOf(c)
		zktest.Require(t, err)
		to := (from + 1) % e.Members()
		zktest.Require(t, e.ReconnectTo(c, to))
		zktest.Require(t, e.LoseNextReply(c))
		if _, err := c.Create(dir+"/ghost", nil, 0, zktest.OpenACL); err != zk.ErrConnectionClosed {
			t.Fatalf("Create whose reply is lost = %v; want zk.ErrConnectionClosed", err)
		}
		events.waitState(t, zk.StateHasSession)
		if got, _ := e.MemberOf(c); got != to {
			t.Fatalf("reconnected to member %d; want %d", got, to)
		}
		after := e.Traffic(t, c)
		if _, err := c.Sync(dir); err != nil {
			t.Fatal(err)
		}
		_, st, err := c.Get(dir + "/ghost")
		if err != nil {
			t.Fatalf("the write whose reply was lost: %v", err)
		}
		if len(after.ConnectZxids) != 2 {
			t.Fatalf("connect requests: %#x; want the first and the reconnect", after.ConnectZxids)
		}
		seen := after.ConnectZxids[1]
		if seen != before.ReplyZxid {
			t.Errorf("reconnect sent LastZxidSeen %#x; want %#x, the zxid of the last reply read", seen, before.ReplyZxid)
		}
		if !(seen < st.Czxid && st.Czxid <= after.LostZxid) {
			t.Errorf("reconnect sent LastZxidSeen %#x, the write took %#x, the lost reply carried %#x; want sent < write <= lost",
				seen, st.Czxid, after.LostZxid)
		}
	})
}

// connect opens a plain go-zookeeper session for checks made outside any
// scenario.
func connect(t *testing.T, servers []string) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect(servers, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	timeout := time.After(15 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return c
			}
		case <-timeout:
			t.Fatal(errors.New("no session within 15s"))
		}
	}
}

// TestConformance runs the whole zktest suite against the real ensemble:
// every expectation the fake is held to, checked against ZooKeeper itself.
func TestConformance(t *testing.T) {
	zktest.Run(t, ensemble.NewTarget(ensemble.Servers(t)))
}
