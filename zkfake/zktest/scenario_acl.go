package zktest

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

var aclScenarios = []Scenario{
	{"acl/digest", "digest ACLs: NoAuth until AddAuth with the right password; Exists needs nothing", aclDigest},
	{"acl/getacl-masking", "GetACL needs READ or ADMIN and masks digest hashes without ADMIN", aclGetACLMasking},
	{"acl/auth-scheme", "the auth scheme expands to every digest identity of the session", aclAuthScheme},
	{"acl/ip", "ip ACLs match the loopback client, by address or CIDR", aclIP},
	{"acl/parent-permissions", "Create and Delete need CREATE and DELETE on the parent, checked before existence", aclParentPermissions},
	{"acl/node-permissions", "Get/Children need READ, Set WRITE, SetACL ADMIN, multi check READ", aclNodePermissions},
	{"acl/invalid", "malformed ACL lists fail with InvalidACL before anything else", aclInvalid},
	{"acl/addauth-bad-scheme", "AddAuth with an unknown scheme fails and drops the connection; the session and its other credentials survive", aclAddAuthBadScheme},
	{"acl/addauth-ip", "AddAuth with the ip scheme succeeds whatever it sends, keeps the connection and grants nothing new", aclAddAuthIP},
}

func aclDigest(t *testing.T, env Env) {
	owner, _ := env.Connect(t, 4*time.Second)
	stranger, _ := env.Connect(t, 4*time.Second)
	wantErr(t, "AddAuth", owner.AddAuth("digest", []byte("alice:secret")), nil)
	p := env.Base() + "/d"
	_, err := owner.Create(p, []byte("private"), 0, zk.DigestACL(zk.PermAll, "alice", "secret"))
	wantErr(t, "Create with a digest ACL", err, nil)
	data, _, err := owner.Get(p)
	wantErr(t, "owner Get", err, nil)
	wantEqual(t, "owner Get", string(data), "private")

	data, st, err := stranger.Get(p)
	wantErr(t, "stranger Get", err, zk.ErrNoAuth)
	wantEqual(t, "Get data on NoAuth", data, []byte(nil))
	wantStat(t, "Get stat on NoAuth", st, zk.Stat{})
	ok, st, err := stranger.Exists(p)
	wantErr(t, "stranger Exists", err, nil)
	if !ok || st.DataLength != 7 {
		t.Fatalf("stranger Exists = %v, %+v; want true with the node's stat", ok, st)
	}
	st, err = stranger.Set(p, []byte("x"), -1)
	wantErr(t, "stranger Set", err, zk.ErrNoAuth)
	wantStat(t, "Set stat on NoAuth", st, zk.Stat{})

	// ZooKeeper 3.8: AddAuth with a wrong password succeeds but grants nothing.
	wantErr(t, "AddAuth with a wrong password", stranger.AddAuth("digest", []byte("alice:wrong")), nil)
	_, _, err = stranger.Get(p)
	wantErr(t, "Get after a wrong password", err, zk.ErrNoAuth)
	wantErr(t, "AddAuth with the right password", stranger.AddAuth("digest", []byte("alice:secret")), nil)
	data, _, err = stranger.Get(p)
	wantErr(t, "Get after AddAuth", err, nil)
	wantEqual(t, "Get after AddAuth", string(data), "private")
}

func aclGetACLMasking(t *testing.T, env Env) {
	owner, _ := env.Connect(t, 4*time.Second)
	stranger, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	mixed := append(zk.DigestACL(zk.PermAll, "alice", "secret"), zk.ACL{Perms: zk.PermRead, Scheme: "world", ID: "anyone"})
	_, err := owner.Create(base+"/readable", nil, 0, mixed)
	wantErr(t, "Create", err, nil)
	acl, _, err := stranger.GetACL(base + "/readable")
	wantErr(t, "GetACL with READ only", err, nil)
	// ZooKeeper 3.8: without ADMIN, GetACL shows digest ids as "user:x".
	wantEqual(t, "GetACL without ADMIN", acl, []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: "alice:x"}, {Perms: zk.PermRead, Scheme: "world", ID: "anyone"}})
	wantErr(t, "AddAuth", owner.AddAuth("digest", []byte("alice:secret")), nil)
	acl, _, err = owner.GetACL(base + "/readable")
	wantErr(t, "GetACL with ADMIN", err, nil)
	wantEqual(t, "GetACL with ADMIN", acl, mixed)

	_, err = owner.Create(base+"/sealed", nil, 0, zk.DigestACL(zk.PermAll, "alice", "secret"))
	wantErr(t, "Create", err, nil)
	acl, st, err := stranger.GetACL(base + "/sealed")
	// ZooKeeper 3.8: GetACL needs READ or ADMIN.
	wantErr(t, "GetACL of a node readable by nobody", err, zk.ErrNoAuth)
	wantEqual(t, "GetACL on NoAuth", acl, []zk.ACL(nil))
	wantStat(t, "GetACL stat on NoAuth", st, zk.Stat{})
	_, err = owner.Create(base+"/zero", nil, 0, zk.WorldACL(0))
	wantErr(t, "Create with no permissions at all", err, nil)
	_, _, err = owner.GetACL(base + "/zero")
	wantErr(t, "GetACL of a node with perms 0", err, zk.ErrNoAuth)
}

func aclAuthScheme(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	stranger, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	_, err := c.Create(base+"/a", nil, 0, zk.AuthACL(zk.PermAll))
	wantErr(t, "auth ACL without any identity", err, zk.ErrInvalidACL)
	wantErr(t, "AddAuth bob", c.AddAuth("digest", []byte("bob:pw")), nil)
	_, err = c.Create(base+"/a", nil, 0, zk.AuthACL(zk.PermAll))
	wantErr(t, "Create with the auth scheme", err, nil)
	acl, _, err := c.GetACL(base + "/a")
	wantErr(t, "GetACL", err, nil)
	// ZooKeeper 3.8: "auth" is replaced by the session's digest identities.
	wantEqual(t, "stored ACL", acl, zk.DigestACL(zk.PermAll, "bob", "pw"))
	_, _, err = stranger.Get(base + "/a")
	wantErr(t, "stranger Get", err, zk.ErrNoAuth)

	_, err = c.Create(base+"/rw", nil, 0, zk.AuthACL(zk.PermRead|zk.PermWrite))
	wantErr(t, "Create with the auth scheme", err, nil)
	acl, _, err = c.GetACL(base + "/rw")
	wantErr(t, "GetACL", err, nil)
	// Without ADMIN even the owner sees the digest masked.
	wantEqual(t, "GetACL without ADMIN", acl, []zk.ACL{{Perms: zk.PermRead | zk.PermWrite, Scheme: "digest", ID: "bob:x"}})
	_, err = c.SetACL(base+"/rw", zk.AuthACL(zk.PermAll), -1)
	wantErr(t, "SetACL without ADMIN", err, zk.ErrNoAuth)

	wantErr(t, "AddAuth carol", c.AddAuth("digest", []byte("carol:pw2")), nil)
	_, err = c.Create(base+"/b", nil, 0, zk.AuthACL(zk.PermAll))
	wantErr(t, "Create with two identities", err, nil)
	acl, _, _ = c.GetACL(base + "/b")
	if len(acl) != 2 || !containsACL(acl, zk.DigestACL(zk.PermAll, "bob", "pw")[0]) || !containsACL(acl, zk.DigestACL(zk.PermAll, "carol", "pw2")[0]) {
		t.Fatalf("auth ACL with identities bob and carol stored as %v; want both digests", acl)
	}
}

func containsACL(list []zk.ACL, want zk.ACL) bool {
	for _, a := range list {
		if a == want {
			return true
		}
	}
	return false
}

func aclIP(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	for _, id := range []string{"127.0.0.1", "127.0.0.0/8"} {
		p := fmt.Sprintf("%s/ip-%d", base, len(id))
		_, err := c.Create(p, []byte("v"), 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: id}})
		wantErr(t, "Create with ip "+id, err, nil)
		_, _, err = c.Get(p)
		wantErr(t, "Get from loopback with ip "+id, err, nil)
	}
	p := base + "/elsewhere"
	_, err := c.Create(p, nil, 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "10.1.2.3"}})
	wantErr(t, "Create with ip 10.1.2.3", err, nil)
	_, _, err = c.Get(p)
	wantErr(t, "Get from loopback with ip 10.1.2.3", err, zk.ErrNoAuth)
}

func aclParentPermissions(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	p := create(t, c, base+"/p", nil, 0)
	child := create(t, c, p+"/child", nil, 0)
	_, err := c.SetACL(p, zk.WorldACL(zk.PermAll&^(zk.PermCreate|zk.PermDelete)), -1)
	wantErr(t, "SetACL", err, nil)
	_, err = c.Create(p+"/new", nil, 0, OpenACL)
	wantErr(t, "Create without CREATE on the parent", err, zk.ErrNoAuth)
	// ZooKeeper 3.8: the parent's CREATE permission is checked before NodeExists.
	_, err = c.Create(child, nil, 0, OpenACL)
	wantErr(t, "Create of an existing child without CREATE", err, zk.ErrNoAuth)
	wantErr(t, "Delete without DELETE on the parent", c.Delete(child, -1), zk.ErrNoAuth)
	// ZooKeeper 3.8: the parent's DELETE permission is checked before the node is looked up.
	wantErr(t, "Delete of a missing child without DELETE", c.Delete(p+"/missing", -1), zk.ErrNoAuth)
	wantErr(t, "Delete with a wrong version without DELETE", c.Delete(child, 9), zk.ErrNoAuth)

	// The node's own ACL does not matter for its deletion.
	sealed := create(t, c, base+"/sealed", nil, 0)
	_, err = c.SetACL(sealed, zk.WorldACL(0), -1)
	wantErr(t, "SetACL", err, nil)
	wantErr(t, "Delete of a node granting nothing", c.Delete(sealed, -1), nil)

	_, err = c.SetACL(p, zk.WorldACL(zk.PermCreate|zk.PermDelete|zk.PermRead), -1)
	wantErr(t, "SetACL", err, nil)
	wantErr(t, "Delete with DELETE on the parent", c.Delete(child, -1), nil)
	wantEqual(t, "Create with CREATE on the parent", create(t, c, p+"/new", nil, 0), p+"/new")
}

func aclNodePermissions(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	node := func(name string, perms int32) string {
		p := create(t, c, base+"/"+name, []byte("d"), 0)
		if _, err := c.SetACL(p, zk.WorldACL(perms), -1); err != nil {
			t.Fatalf("SetACL(%s) = %v", p, err)
		}
		return p
	}
	writeOnly := node("write", zk.PermWrite)
	_, _, err := c.Get(writeOnly)
	wantErr(t, "Get without READ", err, zk.ErrNoAuth)
	_, _, err = c.Children(writeOnly)
	wantErr(t, "Children without READ", err, zk.ErrNoAuth)
	_, _, _, err = c.GetW(writeOnly)
	wantErr(t, "GetW without READ", err, zk.ErrNoAuth)
	ok, _, err := c.Exists(writeOnly)
	wantErr(t, "Exists without READ", err, nil)
	wantEqual(t, "Exists", ok, true)
	_, err = c.Set(writeOnly, []byte("w"), -1)
	wantErr(t, "Set with WRITE", err, nil)
	_, err = c.SetACL(writeOnly, OpenACL, -1)
	wantErr(t, "SetACL without ADMIN", err, zk.ErrNoAuth)
	_, err = c.Multi(&zk.CheckVersionRequest{Path: writeOnly, Version: 1})
	// ZooKeeper 3.8: a multi's check op needs READ.
	wantErr(t, "multi check without READ", err, zk.ErrNoAuth)

	readOnly := node("read", zk.PermRead)
	_, err = c.Set(readOnly, []byte("w"), -1)
	wantErr(t, "Set without WRITE", err, zk.ErrNoAuth)
	// ZooKeeper 3.8: WRITE is checked before the version.
	_, err = c.Set(readOnly, []byte("w"), 42)
	wantErr(t, "Set with a wrong version without WRITE", err, zk.ErrNoAuth)
	_, err = c.Multi(&zk.SetDataRequest{Path: readOnly, Data: []byte("w"), Version: -1})
	wantErr(t, "multi set without WRITE", err, zk.ErrNoAuth)
	_, err = c.Multi(&zk.CheckVersionRequest{Path: readOnly, Version: 0})
	wantErr(t, "multi check with READ", err, nil)

	adminOnly := node("admin", zk.PermAdmin)
	acl, _, err := c.GetACL(adminOnly)
	wantErr(t, "GetACL with ADMIN", err, nil)
	wantEqual(t, "GetACL", acl, zk.WorldACL(zk.PermAdmin))
	st, err := c.SetACL(adminOnly, OpenACL, 1)
	wantErr(t, "SetACL with ADMIN", err, nil)
	wantEqual(t, "Aversion", st.Aversion, int32(2))
}

func aclInvalid(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	p := create(t, c, base+"/n", nil, 0)
	invalid := map[string][]zk.ACL{
		"nil":                     nil,
		"empty":                   {},
		"auth without identity":   zk.AuthACL(zk.PermAll),
		"unknown scheme":          {{Perms: zk.PermAll, Scheme: "bogus", ID: "x"}},
		"ip that is no address":   {{Perms: zk.PermAll, Scheme: "ip", ID: "not-an-ip"}},
		"digest without a colon":  {{Perms: zk.PermAll, Scheme: "digest", ID: "nocolon"}},
		"world other than anyone": {{Perms: zk.PermAll, Scheme: "world", ID: "someone"}},
	}
	for what, acl := range invalid {
		_, err := c.Create(base+"/bad", nil, 0, acl)
		wantErr(t, "Create with "+what+" ACL", err, zk.ErrInvalidACL)
		_, err = c.SetACL(p, acl, -1)
		wantErr(t, "SetACL with "+what+" ACL", err, zk.ErrInvalidACL)
	}
	// ZooKeeper 3.8: the ACL list is checked before the parent or node is looked up.
	_, err := c.Create(base+"/missing/child", nil, 0, nil)
	wantErr(t, "Create with nil ACL under a missing parent", err, zk.ErrInvalidACL)
	_, err = c.SetACL(base+"/missing", nil, -1)
	wantErr(t, "SetACL with nil ACL on a missing node", err, zk.ErrInvalidACL)
	// ZooKeeper 3.8: unused permission bits are stored as given.
	_, err = c.Create(base+"/bits", nil, 0, zk.WorldACL(0x7f))
	wantErr(t, "Create with perms 0x7f", err, nil)
	acl, _, _ := c.GetACL(base + "/bits")
	wantEqual(t, "stored perms", acl, zk.WorldACL(0x7f))
}

func aclAddAuthBadScheme(t *testing.T, env Env) {
	c, events := env.Connect(t, 4*time.Second)
	wantErr(t, "AddAuth digest", c.AddAuth("digest", []byte("alice:secret")), nil)
	p := env.Base() + "/d"
	_, err := c.Create(p, nil, 0, zk.DigestACL(zk.PermAll, "alice", "secret"))
	wantErr(t, "Create", err, nil)
	session := c.SessionID()
	// ZooKeeper 3.8: an unknown auth scheme fails the request and closes the connection.
	wantErr(t, "AddAuth with an unknown scheme", c.AddAuth("bogus", []byte("x")), zk.ErrAuthFailed)
	waitState(t, "after the failed AddAuth", events, zk.StateDisconnected)
	waitState(t, "reconnecting", events, zk.StateHasSession)
	wantEqual(t, "session id after reconnect", c.SessionID(), session)
	// go-zookeeper re-sends the digest credentials on reconnect.
	_, _, err = c.Get(p)
	wantErr(t, "Get with the re-sent digest", err, nil)
}

func aclAddAuthIP(t *testing.T, env Env) {
	c, events := env.Connect(t, 4*time.Second)
	p := env.Base() + "/elsewhere"
	_, err := c.Create(p, nil, 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "ip", ID: "10.1.2.3"}})
	wantErr(t, "Create with an ACL for another address", err, nil)
	// ZooKeeper 3.8: the ip provider authenticates the client as the
	// address it connects from, whatever the request carries.
	wantErr(t, "AddAuth ip", c.AddAuth("ip", []byte("10.1.2.3")), nil)
	_, _, err = c.Get(p)
	wantErr(t, "Get of the node only 10.1.2.3 may read", err, zk.ErrNoAuth)
	wantErr(t, "Sync", func() error { _, err := c.Sync(env.Base()); return err }(), nil)
	select {
	case ev := <-events:
		t.Fatalf("event %v after AddAuth ip: want the connection kept", ev)
	default:
	}
}
