package zktest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

var sessionScenarios = []Scenario{
	{"session/close", "Close removes ephemerals, fires watches, ends the closer's other watches with ErrClosing and closes its channel", sessionClose},
	{"session/calls-after-close", "every call after Close returns ErrConnectionClosed in go-zookeeper's shapes", sessionCallsAfterClose},
	{"session/expire", "expiry removes ephemerals, ends every watch with ErrSessionExpired, and the Conn carries on with a new session", sessionExpire},
	{"session/partition-heal", "a partition healed within the timeout keeps the session, its ephemerals, and delivers missed watch events", sessionPartitionHeal},
	{"session/timeout-clamped", "a requested session timeout above 20 ticks is clamped to 20 ticks", sessionTimeoutClamped},
}

func sortEvents(evs []zk.Event) {
	slices.SortFunc(evs, func(a, b zk.Event) int { return strings.Compare(a.Path, b.Path) })
}

func sessionClose(t *testing.T, env Env) {
	a, aEvents := env.Connect(t, 4*time.Second)
	b, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	eph := create(t, a, base+"/e", nil, zk.FlagEphemeral)
	x := create(t, a, base+"/x", nil, 0)
	_, _, aData, _ := a.GetW(x)
	_, _, aOwnEph, _ := a.ExistsW(eph)
	_, _, aChildren, _ := a.ChildrenW(base)
	_, _, aMissing, _ := a.ExistsW(base + "/missing")
	_, _, bEph, _ := b.ExistsW(eph)
	_, _, bChildren, _ := b.ChildrenW(base)
	session := a.SessionID()
	drain(aEvents)

	a.Close()
	wantEvent(t, "other session's exists watch", bEph, watchEvent(zk.EventNodeDeleted, eph))
	wantEvent(t, "other session's child watch", bChildren, watchEvent(zk.EventNodeChildrenChanged, base))
	// ZooKeeper 3.8: the server deletes the closer's ephemerals before
	// answering the close, so the closer's own watches on them still fire.
	wantEvent(t, "closer's watch on its own ephemeral", aOwnEph, watchEvent(zk.EventNodeDeleted, eph))
	wantEvent(t, "closer's child watch", aChildren, watchEvent(zk.EventNodeChildrenChanged, base))
	// go-zookeeper ends every other watch with EventNotWatching and ErrClosing.
	wantEvent(t, "closer's data watch", aData, zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: x, Err: zk.ErrClosing})
	wantEvent(t, "closer's exists watch on a missing node", aMissing, zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: base + "/missing", Err: zk.ErrClosing})

	var got []zk.Event
	for ev := range aEvents {
		got = append(got, ev)
		if len(got) > 10 {
			t.Fatalf("closed session's channel does not close: %+v", got)
		}
	}
	if len(got) != 5 {
		t.Fatalf("closing session's events = %+v; want 5 then a closed channel", got)
	}
	wantEqual(t, "closing session's first events", got[:3], []zk.Event{
		watchEvent(zk.EventNodeDeleted, eph),
		watchEvent(zk.EventNodeChildrenChanged, base),
		{Type: zk.EventSession, State: zk.StateDisconnected, Server: a.Server()},
	})
	notWatching := got[3:]
	sortEvents(notWatching)
	wantEqual(t, "closing session's last events (any order)", notWatching, []zk.Event{
		{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: base + "/missing", Err: zk.ErrClosing},
		{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: x, Err: zk.ErrClosing},
	})
	wantEqual(t, "State after Close", a.State(), zk.StateDisconnected)
	wantEqual(t, "SessionID after Close", a.SessionID(), session)
	if ok, _, _ := b.Exists(eph); ok {
		t.Fatalf("ephemeral %s survived its session's Close", eph)
	}
	a.Close() // a second Close is harmless
}

func sessionCallsAfterClose(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	p := create(t, c, env.Base()+"/n", nil, 0)
	c.Close()
	closed := zk.ErrConnectionClosed

	path, err := c.Create(p+"/x", nil, 0, OpenACL)
	wantErr(t, "Create", err, closed)
	wantEqual(t, "Create path", path, "")
	path, err = c.CreateContainer(p+"/x", nil, zk.FlagContainer, OpenACL)
	wantErr(t, "CreateContainer", err, closed)
	wantEqual(t, "CreateContainer path", path, "")
	path, err = c.CreateTTL(p+"/x", nil, zk.FlagTTL, OpenACL, time.Minute)
	wantErr(t, "CreateTTL", err, closed)
	wantEqual(t, "CreateTTL path", path, "")
	data, st, err := c.Get(p)
	wantErr(t, "Get", err, closed)
	if data != nil || st != nil {
		t.Fatalf("Get after Close = %v, %v; want nil, nil", data, st)
	}
	data, st, ch, err := c.GetW(p)
	wantErr(t, "GetW", err, closed)
	if data != nil || st != nil || ch != nil {
		t.Fatalf("GetW after Close = %v, %v, %v; want nils", data, st, ch)
	}
	ok, st, err := c.Exists(p)
	wantErr(t, "Exists", err, closed)
	if ok || st != nil {
		t.Fatalf("Exists after Close = %v, %v; want false, nil", ok, st)
	}
	ok, st, ch, err = c.ExistsW(p)
	wantErr(t, "ExistsW", err, closed)
	if ok || st != nil || ch != nil {
		t.Fatalf("ExistsW after Close = %v, %v, %v; want false and nils", ok, st, ch)
	}
	children, st, err := c.Children(p)
	wantErr(t, "Children", err, closed)
	if children != nil || st != nil {
		t.Fatalf("Children after Close = %v, %v; want nil, nil", children, st)
	}
	children, st, ch, err = c.ChildrenW(p)
	wantErr(t, "ChildrenW", err, closed)
	if children != nil || st != nil || ch != nil {
		t.Fatalf("ChildrenW after Close = %v, %v, %v; want nils", children, st, ch)
	}
	st, err = c.Set(p, nil, -1)
	wantErr(t, "Set", err, closed)
	if st != nil {
		t.Fatalf("Set after Close returned Stat %+v; want nil", st)
	}
	wantErr(t, "Delete", c.Delete(p, -1), closed)
	acl, st, err := c.GetACL(p)
	wantErr(t, "GetACL", err, closed)
	if acl != nil || st != nil {
		t.Fatalf("GetACL after Close = %v, %v; want nil, nil", acl, st)
	}
	st, err = c.SetACL(p, OpenACL, -1)
	wantErr(t, "SetACL", err, closed)
	if st != nil {
		t.Fatalf("SetACL after Close returned Stat %+v; want nil", st)
	}
	path, err = c.Sync(p)
	wantErr(t, "Sync", err, closed)
	wantEqual(t, "Sync path", path, "")
	res, err := c.Multi(&zk.DeleteRequest{Path: p, Version: -1})
	wantErr(t, "Multi", err, closed)
	wantEqual(t, "Multi results", res, []zk.MultiResponse(nil))
	wantErr(t, "AddAuth", c.AddAuth("digest", []byte("u:p")), closed)
	// Client-side path checks still come first.
	_, _, err = c.Get("bad")
	wantErr(t, "Get of an invalid path after Close", err, zk.ErrInvalidPath)
}

func sessionExpire(t *testing.T, env Env) {
	expirer, ok := env.(Expirer)
	if !ok {
		t.Skip("environment cannot expire sessions")
	}
	a, aEvents := env.Connect(t, time.Second)
	b, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	eph := create(t, a, base+"/e", nil, zk.FlagEphemeral)
	x := create(t, a, base+"/x", nil, 0)
	_, _, aData, _ := a.GetW(x)
	_, _, aOwnEph, _ := a.ExistsW(eph)
	_, _, aChildren, _ := a.ChildrenW(base)
	_, _, bEph, _ := b.ExistsW(eph)
	_, _, bChildren, _ := b.ChildrenW(base)
	old := a.SessionID()

	Require(t, expirer.Expire(a))
	wantEvent(t, "other session's exists watch", bEph, watchEvent(zk.EventNodeDeleted, eph))
	wantEvent(t, "other session's child watch", bChildren, watchEvent(zk.EventNodeChildrenChanged, base))
	if ok, _, _ := b.Exists(eph); ok {
		t.Fatalf("ephemeral %s survived its session's expiry", eph)
	}

	waitState(t, "expired session", aEvents, zk.StateExpired)
	// go-zookeeper ends every watch of an expired session with ErrSessionExpired.
	for _, w := range []struct {
		what string
		ch   <-chan zk.Event
		path string
	}{{"data watch", aData, x}, {"exists watch on own ephemeral", aOwnEph, eph}, {"child watch", aChildren, base}} {
		wantEvent(t, w.what, w.ch, zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: w.path, Err: zk.ErrSessionExpired})
	}
	waitState(t, "new session after expiry", aEvents, zk.StateHasSession)
	if id := a.SessionID(); id == old || id == 0 {
		t.Fatalf("session id after expiry = %d; want a new id (old %d)", id, old)
	}
	again := create(t, a, base+"/e", nil, zk.FlagEphemeral)
	wantEqual(t, "new ephemeral owner", stat(t, b, again).EphemeralOwner, a.SessionID())
}

func sessionPartitionHeal(t *testing.T, env Env) {
	partitioner, ok := env.(Partitioner)
	if !ok {
		t.Skip("environment cannot partition sessions")
	}
	a, aEvents := env.Connect(t, 4*time.Second)
	b, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	eph := create(t, a, base+"/e", nil, zk.FlagEphemeral)
	x := create(t, a, base+"/x", nil, 0)
	gone := create(t, a, base+"/gone", nil, 0)
	_, _, aData, _ := a.GetW(x)
	_, _, aCreated, _ := a.ExistsW(base + "/new")
	_, _, aDeleted, _ := a.GetW(gone)
	_, _, aChildren, _ := a.ChildrenW(base)
	session := a.SessionID()

	Require(t, partitioner.Partition(a))
	waitState(t, "partitioned", aEvents, zk.StateDisconnected)
	set(t, b, x, []byte("while away"))
	create(t, b, base+"/new", nil, 0)
	wantErr(t, "Delete", b.Delete(gone, -1), nil)
	Require(t, partitioner.Heal(a))
	waitState(t, "healed", aEvents, zk.StateHasSession)

	wantEqual(t, "session id after a short partition", a.SessionID(), session)
	// The client re-registers its watches with the last zxid it saw
	// (setWatches); the server fires those whose nodes changed since.
	wantEvent(t, "data watch missed while partitioned", aData, watchEvent(zk.EventNodeDataChanged, x))
	wantEvent(t, "exists watch missed while partitioned", aCreated, watchEvent(zk.EventNodeCreated, base+"/new"))
	wantEvent(t, "data watch on a node deleted while partitioned", aDeleted, watchEvent(zk.EventNodeDeleted, gone))
	wantEvent(t, "child watch missed while partitioned", aChildren, watchEvent(zk.EventNodeChildrenChanged, base))
	st := stat(t, b, eph)
	wantEqual(t, "ephemeral owner after the partition", st.EphemeralOwner, session)
	data, _, err := a.Get(x)
	wantErr(t, "Get after heal", err, nil)
	wantEqual(t, "data after heal", string(data), "while away")
}

func sessionTimeoutClamped(t *testing.T, env Env) {
	partitioner, ok := env.(Partitioner)
	ticker, ok2 := env.(Ticker)
	if !ok || !ok2 {
		t.Skip("environment cannot partition sessions or does not know its tick")
	}
	tick := ticker.TickTime()
	a, aEvents := env.Connect(t, time.Hour)
	b, _ := env.Connect(t, 4*time.Second)
	eph := create(t, a, env.Base()+"/e", nil, zk.FlagEphemeral)
	Require(t, partitioner.Partition(a))
	start := time.Now()
	// ZooKeeper 3.8: the server clamps a requested timeout to 2..20 ticks;
	// the tracker expires sessions on tick boundaries, so allow a few more.
	limit := 20*tick + 5*tick
	for gone := false; !gone; {
		if time.Since(start) > limit {
			t.Fatalf("ephemeral of a session asking for a 1h timeout still there after %v (20 ticks = %v)", time.Since(start), 20*tick)
		}
		time.Sleep(tick / 2)
		exists, _, err := b.Exists(eph)
		wantErr(t, "Exists", err, nil)
		gone = !exists
	}
	Require(t, partitioner.Heal(a))
	waitState(t, "after heal", aEvents, zk.StateExpired)
	waitState(t, "after expiry", aEvents, zk.StateHasSession)
	keepAlive(t, env, a, tick)
}

// keepAlive checks that a session whose timeout was clamped is kept alive by
// the client: an ephemeral outlives several timeouts while connected.
func keepAlive(t *testing.T, env Env, c Conn, tick time.Duration) {
	t.Helper()
	p := create(t, c, env.Base()+"/alive", nil, zk.FlagEphemeral)
	time.Sleep(22 * tick)
	if ok, _, err := c.Exists(p); err != nil || !ok {
		t.Fatalf("ephemeral of a live session vanished: %v, %v", ok, err)
	}
}
