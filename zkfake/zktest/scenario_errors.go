package zktest

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

var errorScenarios = []Scenario{
	{"errors/missing-node", "every method's return values on a missing node, as go-zookeeper shapes them", errorsMissingNode},
	{"errors/node-exists", "creating an existing node fails with NodeExists for every create flavour", errorsNodeExists},
	{"errors/bad-version", "Set, Delete and SetACL with a wrong version fail and change nothing", errorsBadVersion},
	{"errors/not-empty", "deleting a node with children fails with NotEmpty; version is checked first", errorsNotEmpty},
	{"errors/no-children-for-ephemerals", "ephemeral nodes cannot have children, whoever asks and with any flags", errorsNoChildrenForEphemerals},
	{"errors/invalid-path", "go-zookeeper rejects malformed paths locally with ErrInvalidPath", errorsInvalidPath},
	{"errors/server-refused-path", "paths go-zookeeper sends but the server refuses (PathUtils.validatePath): BadArguments on the writes that check them, NoNode elsewhere", errorsServerRefusedPath},
	{"errors/invalid-flags", "go-zookeeper's own checks on create flags", errorsInvalidFlags},
	{"errors/bad-ttl", "the server rejects TTLs outside 1ms..2^40-1ms with BadArguments", errorsBadTTL},
	{"errors/special-nodes", "/, /zookeeper and its children cannot be deleted; other writes there are allowed", errorsSpecialNodes},
	{"errors/oversize-request", "a request over jute.maxbuffer drops the connection; the session survives", errorsOversizeRequest},
}

func errorsMissingNode(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	missing := env.Base() + "/missing"

	data, st, err := c.Get(missing)
	wantErr(t, "Get", err, zk.ErrNoNode)
	wantEqual(t, "Get data", data, []byte(nil))
	wantStat(t, "Get stat", st, zk.Stat{})

	data, st, ch, err := c.GetW(missing)
	wantErr(t, "GetW", err, zk.ErrNoNode)
	if data != nil || st != nil || ch != nil {
		t.Fatalf("GetW on a missing node = %v, %v, %v; want nil, nil, nil", data, st, ch)
	}

	ok, st, err := c.Exists(missing)
	wantErr(t, "Exists", err, nil)
	wantEqual(t, "Exists", ok, false)
	wantStat(t, "Exists stat", st, zk.Stat{})

	ok, st, ch, err = c.ExistsW(missing)
	wantErr(t, "ExistsW", err, nil)
	wantEqual(t, "ExistsW", ok, false)
	wantStat(t, "ExistsW stat", st, zk.Stat{})
	if ch == nil {
		t.Fatalf("ExistsW on a missing node returned no watch channel")
	}

	children, st, err := c.Children(missing)
	wantErr(t, "Children", err, zk.ErrNoNode)
	wantEqual(t, "Children", children, []string(nil))
	wantStat(t, "Children stat", st, zk.Stat{})

	children, st, ch, err = c.ChildrenW(missing)
	wantErr(t, "ChildrenW", err, zk.ErrNoNode)
	if children != nil || st != nil || ch != nil {
		t.Fatalf("ChildrenW on a missing node = %v, %v, %v; want nil, nil, nil", children, st, ch)
	}

	st, err = c.Set(missing, []byte("x"), -1)
	wantErr(t, "Set", err, zk.ErrNoNode)
	wantStat(t, "Set stat", st, zk.Stat{})

	wantErr(t, "Delete", c.Delete(missing, -1), zk.ErrNoNode)

	acl, st, err := c.GetACL(missing)
	wantErr(t, "GetACL", err, zk.ErrNoNode)
	wantEqual(t, "GetACL", acl, []zk.ACL(nil))
	wantStat(t, "GetACL stat", st, zk.Stat{})

	st, err = c.SetACL(missing, OpenACL, -1)
	wantErr(t, "SetACL", err, zk.ErrNoNode)
	wantStat(t, "SetACL stat", st, zk.Stat{})

	path, err := c.Create(missing+"/child", nil, 0, OpenACL)
	wantErr(t, "Create under a missing parent", err, zk.ErrNoNode)
	wantEqual(t, "Create path", path, "")
	path, err = c.Create(missing+"/child-", nil, zk.FlagEphemeralSequential, OpenACL)
	wantErr(t, "sequential Create under a missing parent", err, zk.ErrNoNode)
	wantEqual(t, "Create path", path, "")
	path, err = c.CreateContainer(missing+"/child", nil, zk.FlagContainer, OpenACL)
	wantErr(t, "CreateContainer under a missing parent", err, zk.ErrNoNode)
	wantEqual(t, "CreateContainer path", path, "")
	path, err = c.CreateTTL(missing+"/child", nil, zk.FlagTTL, OpenACL, time.Minute)
	wantErr(t, "CreateTTL under a missing parent", err, zk.ErrNoNode)
	wantEqual(t, "CreateTTL path", path, "")
}

func errorsNodeExists(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	p := create(t, c, env.Base()+"/n", []byte("orig"), 0)
	before := stat(t, c, p)
	for _, flags := range []int32{zk.FlagPersistent, zk.FlagEphemeral} {
		got, err := c.Create(p, []byte("new"), flags, OpenACL)
		wantErr(t, fmt.Sprintf("Create flags=%d of an existing node", flags), err, zk.ErrNodeExists)
		wantEqual(t, "Create path", got, "")
	}
	got, err := c.CreateContainer(p, nil, zk.FlagContainer, OpenACL)
	wantErr(t, "CreateContainer of an existing node", err, zk.ErrNodeExists)
	wantEqual(t, "CreateContainer path", got, "")
	got, err = c.CreateTTL(p, nil, zk.FlagTTL, OpenACL, time.Minute)
	wantErr(t, "CreateTTL of an existing node", err, zk.ErrNodeExists)
	wantEqual(t, "CreateTTL path", got, "")
	got, err = c.Create(env.Base(), nil, 0, OpenACL)
	wantErr(t, "Create of the base", err, zk.ErrNodeExists)
	after := stat(t, c, p)
	wantStat(t, "stat after failed creates", &after, before)
	data, _, _ := c.Get(p)
	wantEqual(t, "data after failed creates", string(data), "orig")
}

func errorsBadVersion(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	p := create(t, c, env.Base()+"/n", []byte("v0"), 0)
	set(t, c, p, []byte("v1"))
	before := stat(t, c, p)
	for _, v := range []int32{0, 2, -2} {
		st, err := c.Set(p, []byte("bad"), v)
		wantErr(t, fmt.Sprintf("Set version %d on version 1", v), err, zk.ErrBadVersion)
		wantStat(t, "Set stat on error", st, zk.Stat{})
		wantErr(t, fmt.Sprintf("Delete version %d on version 1", v), c.Delete(p, v), zk.ErrBadVersion)
		st, err = c.SetACL(p, OpenACL, v+3)
		wantErr(t, fmt.Sprintf("SetACL version %d on Aversion 0", v+3), err, zk.ErrBadVersion)
		wantStat(t, "SetACL stat on error", st, zk.Stat{})
	}
	after := stat(t, c, p)
	wantStat(t, "stat after failed writes", &after, before)
	wantErr(t, "Delete with the right version", c.Delete(p, 1), nil)
}

func errorsNotEmpty(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	p := create(t, c, env.Base()+"/n", nil, 0)
	create(t, c, p+"/child", nil, 0)
	wantErr(t, "Delete of a node with a child", c.Delete(p, -1), zk.ErrNotEmpty)
	// ZooKeeper 3.8: the version check comes before the children check.
	wantErr(t, "Delete with a wrong version of a node with a child", c.Delete(p, 5), zk.ErrBadVersion)
	wantErr(t, "Delete of the child", c.Delete(p+"/child", -1), nil)
	wantErr(t, "Delete of the emptied node", c.Delete(p, 0), nil)
}

func errorsNoChildrenForEphemerals(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	other, _ := env.Connect(t, 4*time.Second)
	eph := create(t, c, env.Base()+"/e", nil, zk.FlagEphemeral)
	for _, flags := range []int32{zk.FlagPersistent, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeralSequential} {
		got, err := c.Create(eph+"/child", nil, flags, OpenACL)
		wantErr(t, fmt.Sprintf("Create flags=%d under an ephemeral", flags), err, zk.ErrNoChildrenForEphemerals)
		wantEqual(t, "Create path", got, "")
	}
	_, err := other.Create(eph+"/child", nil, 0, OpenACL)
	wantErr(t, "Create under another session's ephemeral", err, zk.ErrNoChildrenForEphemerals)
	_, err = c.CreateContainer(eph+"/child", nil, zk.FlagContainer, OpenACL)
	wantErr(t, "CreateContainer under an ephemeral", err, zk.ErrNoChildrenForEphemerals)
}

func errorsInvalidPath(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	invalid := []string{
		"", "relative", "/trailing/", base + "//double", base + "/.", base + "/..",
		base + "/./x", base + "/../x", base + "/x/.", base + "/nul\x00", base + "/ctl\x01",
		base + "/del\x7f", base + "/c1\u0085", base + "/private\uf000", base + "/special\ufff0",
	}
	for _, p := range invalid {
		what := fmt.Sprintf("path %q", p)
		_, err := c.Create(p, nil, 0, OpenACL)
		wantErr(t, "Create "+what, err, zk.ErrInvalidPath)
		_, _, err = c.Get(p)
		wantErr(t, "Get "+what, err, zk.ErrInvalidPath)
		_, err = c.Set(p, nil, -1)
		wantErr(t, "Set "+what, err, zk.ErrInvalidPath)
		wantErr(t, "Delete "+what, c.Delete(p, -1), zk.ErrInvalidPath)
		ok, st, err := c.Exists(p)
		wantErr(t, "Exists "+what, err, zk.ErrInvalidPath)
		if ok || st != nil {
			t.Fatalf("Exists %s = %v, %v; want false, nil", what, ok, st)
		}
		_, _, err = c.Children(p)
		wantErr(t, "Children "+what, err, zk.ErrInvalidPath)
		_, _, _, err = c.ExistsW(p)
		wantErr(t, "ExistsW "+what, err, zk.ErrInvalidPath)
		_, _, err = c.GetACL(p)
		wantErr(t, "GetACL "+what, err, zk.ErrInvalidPath)
	}
	// ZooKeeper 3.8: dots inside a name, spaces and other printable Unicode are fine.
	for _, name := range []string{".hidden", "dot.", "...", "a b", "nbsp\u00a0", "ünï", "zookeeper"} {
		create(t, c, base+"/"+name, nil, 0)
	}
	// A sequential create may end in "/" but not contain "//".
	_, err := c.Create(base+"//", nil, zk.FlagSequence, OpenACL)
	wantErr(t, "sequential Create of //", err, zk.ErrInvalidPath)
}

// errorsServerRefusedPath sends names whose characters go-zookeeper lets
// through and ZooKeeper's PathUtils.validatePath refuses, seeing the path
// as UTF-16: U+E000 to U+EFFF (it refuses U+D800 to U+F8FF, go-zookeeper
// U+F000 to U+F8FF), U+FFFF, and a character outside the Basic
// Multilingual Plane, which arrives as two surrogates. The server checks a
// create's path (with its sequence number), a setData's, a setACL's and a
// multi's check, and answers BadArguments; a delete and the reads do not
// check, and find no node.
func errorsServerRefusedPath(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	create(t, c, base+"/dir", nil, 0)
	for _, name := range []string{"private\ue000", "private\uefff", "a\ueeeez", "nonchar\uffff", "emoji\U0001F600"} {
		p := base + "/dir/" + name
		what := fmt.Sprintf("path %q", p)
		_, err := c.Create(p, nil, 0, OpenACL)
		wantErr(t, "Create "+what, err, zk.ErrBadArguments)
		_, err = c.Create(p, nil, zk.FlagEphemeral|zk.FlagSequence, OpenACL)
		wantErr(t, "sequential Create "+what, err, zk.ErrBadArguments)
		_, err = c.CreateContainer(p, nil, zk.FlagContainer, OpenACL)
		wantErr(t, "CreateContainer "+what, err, zk.ErrBadArguments)
		_, err = c.CreateTTL(p, nil, zk.FlagTTL, OpenACL, time.Minute)
		wantErr(t, "CreateTTL "+what, err, zk.ErrBadArguments)
		_, err = c.Set(p, []byte("x"), -1)
		wantErr(t, "Set "+what, err, zk.ErrBadArguments)
		_, err = c.SetACL(p, OpenACL, -1)
		wantErr(t, "SetACL "+what, err, zk.ErrBadArguments)
		_, err = c.Multi(&zk.CreateRequest{Path: p, Acl: OpenACL})
		wantErr(t, "Multi creating "+what, err, zk.ErrBadArguments)
		_, err = c.Multi(&zk.CheckVersionRequest{Path: p, Version: -1})
		wantErr(t, "Multi checking "+what, err, zk.ErrBadArguments)
		wantErr(t, "Delete "+what, c.Delete(p, -1), zk.ErrNoNode)
		_, _, err = c.Get(p)
		wantErr(t, "Get "+what, err, zk.ErrNoNode)
		ok, _, err := c.Exists(p)
		wantErr(t, "Exists "+what, err, nil)
		if ok {
			t.Fatalf("Exists %s = true", what)
		}
		_, _, err = c.Children(p)
		wantErr(t, "Children "+what, err, zk.ErrNoNode)
		_, _, err = c.GetACL(p)
		wantErr(t, "GetACL "+what, err, zk.ErrNoNode)
	}
	children, _, err := c.Children(base + "/dir")
	wantErr(t, "Children of the directory", err, nil)
	wantEqual(t, "children after every refused create", len(children), 0)
}

func errorsInvalidFlags(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	p := env.Base() + "/n"
	_, err := c.Create(p, nil, zk.FlagTTL, OpenACL)
	wantErrIs(t, "Create with FlagTTL", err, zk.ErrInvalidFlags)
	wantErrText(t, "Create with FlagTTL", err, "Create with TTL flag disallowed: zk: invalid flags specified")
	_, err = c.Create(p, nil, zk.FlagPersistentSequentialWithTTL, OpenACL)
	wantErrIs(t, "Create with FlagPersistentSequentialWithTTL", err, zk.ErrInvalidFlags)
	_, err = c.Create(p, nil, 7, OpenACL)
	wantErrText(t, "Create with flags 7", err, "invalid flag value: [7]")
	_, err = c.Create(p, nil, -1, OpenACL)
	wantErrText(t, "Create with flags -1", err, "invalid flag value: [-1]")
	_, err = c.CreateTTL(p, nil, zk.FlagEphemeral, OpenACL, time.Minute)
	wantErrIs(t, "CreateTTL with FlagEphemeral", err, zk.ErrInvalidFlags)
	wantErrText(t, "CreateTTL with FlagEphemeral", err, "CreateTTL requires TTL flag: zk: invalid flags specified")
	_, err = c.CreateContainer(p, nil, zk.FlagPersistent, OpenACL)
	wantErrIs(t, "CreateContainer with FlagPersistent", err, zk.ErrInvalidFlags)
	wantErrText(t, "CreateContainer with FlagPersistent", err, "CreateContainer requires container flag: zk: invalid flags specified")
	if ok, _, _ := c.Exists(p); ok {
		t.Fatalf("a create rejected for its flags left %s behind", p)
	}
	// go-zookeeper passes FlagContainer through plain Create; the server accepts it.
	got, err := c.Create(p, nil, zk.FlagContainer, OpenACL)
	wantErr(t, "Create with FlagContainer", err, nil)
	wantEqual(t, "Create path", got, p)
}

func errorsBadTTL(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	p := env.Base() + "/ttl"
	for _, ttl := range []time.Duration{0, -time.Second, time.Microsecond, (1 << 40) * time.Millisecond} {
		got, err := c.CreateTTL(p, nil, zk.FlagTTL, OpenACL, ttl)
		// ZooKeeper 3.8: a TTL must be 1..0xFFFFFFFFFF milliseconds (go-zookeeper sends whole milliseconds).
		wantErr(t, fmt.Sprintf("CreateTTL ttl=%v", ttl), err, zk.ErrBadArguments)
		wantEqual(t, "CreateTTL path", got, "")
	}
	got, err := c.CreateTTL(p, nil, zk.FlagTTL, OpenACL, (1<<40-1)*time.Millisecond)
	wantErr(t, "CreateTTL with the largest TTL", err, nil)
	wantEqual(t, "CreateTTL path", got, p)
	got, err = c.CreateTTL(p+"2", nil, zk.FlagTTL, OpenACL, time.Millisecond)
	wantErr(t, "CreateTTL with a 1ms TTL", err, nil)
	wantEqual(t, "CreateTTL path", got, p+"2")
}

func errorsSpecialNodes(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	for _, p := range []string{"/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"} {
		// ZooKeeper 3.8: deleting /, /zookeeper, /zookeeper/quota or /zookeeper/config is BadArguments.
		wantErr(t, "Delete "+p, c.Delete(p, -1), zk.ErrBadArguments)
		wantErr(t, "Delete "+p+" with a wrong version", c.Delete(p, 12345), zk.ErrBadArguments)
	}
	for _, p := range []string{"/", "/zookeeper"} {
		_, err := c.Create(p, nil, 0, OpenACL)
		wantErr(t, "Create "+p, err, zk.ErrNodeExists)
	}
	// ZooKeeper 3.8: /zookeeper/config is READ-only for everyone.
	_, err := c.Set("/zookeeper/config", []byte("x"), -1)
	wantErr(t, "Set /zookeeper/config", err, zk.ErrNoAuth)
	_, err = c.Create("/zookeeper/config/x", nil, 0, OpenACL)
	wantErr(t, "Create under /zookeeper/config", err, zk.ErrNoAuth)
	// ZooKeeper 3.8: other writes under /zookeeper are not forbidden.
	p := fmt.Sprintf("/zookeeper/zktest-%d", stat(t, c, env.Base()).Czxid)
	got, err := c.Create(p, []byte("x"), zk.FlagEphemeral, OpenACL)
	wantErr(t, "Create "+p, err, nil)
	wantEqual(t, "Create path", got, p)
	wantErr(t, "Delete "+p, c.Delete(p, -1), nil)
}

func errorsOversizeRequest(t *testing.T, env Env) {
	c, events := env.Connect(t, 4*time.Second)
	p := env.Base() + "/b"
	session := c.SessionID()
	// A create's request frame is 47 bytes plus path and data (world:anyone
	// ACL); ZooKeeper 3.8 drops a connection whose frame exceeds 1048575.
	limit := 1048575 - 47 - len(p)
	got, err := c.Create(p, make([]byte, limit+1), 0, OpenACL)
	// ZooKeeper 3.8: the server closes the connection. go-zookeeper reports
	// ErrConnectionClosed, or on a socket (a real server's, or the served
	// fake's), when the server closed it while the client was still writing
	// the frame, the write's own error (see ClosedConnection): timing
	// decides which.
	if !ClosedConnection(err) {
		t.Fatalf("Create one byte over jute.maxbuffer: error = %v; want the connection closed", describe(err))
	}
	wantEqual(t, "Create path", got, "")
	waitState(t, "after the dropped connection", events, zk.StateDisconnected)
	waitState(t, "reconnecting", events, zk.StateHasSession)
	wantEqual(t, "session after reconnect", c.SessionID(), session)
	if ok, _, _ := c.Exists(p); ok {
		t.Fatalf("the oversize create left %s behind", p)
	}
	got, err = c.Create(p, make([]byte, limit), 0, OpenACL)
	wantErr(t, "Create exactly at jute.maxbuffer", err, nil)
	wantEqual(t, "Create path", got, p)
	wantEqual(t, "DataLength", stat(t, c, p).DataLength, int32(limit))

	// go-zookeeper cannot even encode a request over its 1.5 MiB buffer.
	_, err = c.Set(p, make([]byte, 2<<20), -1)
	wantErr(t, "Set of 2 MiB", err, zk.ErrShortBuffer)
	wantEqual(t, "state after a local encoding failure", c.State(), zk.StateHasSession)
}
