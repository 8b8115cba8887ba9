package zktest

import (
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

var multiScenarios = []Scenario{
	{"multi/success", "a successful multi's per-op results, all at one zxid", multiSuccess},
	{"multi/failure", "op k failing: its error returned, earlier ops nil, later ops \"unknown error: -2\", nothing applied", multiFailure},
	{"multi/first-op-fails", "a multi failing at its first op", multiFirstOpFails},
	{"multi/sees-own-ops", "later ops see earlier ops of the same multi", multiSeesOwnOps},
	{"multi/empty", "an empty multi succeeds with no results and still takes a zxid", multiEmpty},
	{"multi/unknown-op", "go-zookeeper rejects an op type it cannot encode", multiUnknownOp},
}

func multiSuccess(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	scratch := create(t, c, base+"/scratch", nil, 0)
	data := create(t, c, base+"/data", []byte("old"), 0)
	gone := create(t, c, base+"/gone", nil, 0)
	z0 := nextZxid(t, c, scratch)
	res, err := c.Multi(
		&zk.CreateRequest{Path: base + "/new", Data: []byte("n"), Acl: OpenACL},
		&zk.CreateRequest{Path: base + "/seq-", Acl: OpenACL, Flags: zk.FlagSequence},
		&zk.SetDataRequest{Path: data, Data: []byte("newer"), Version: 0},
		&zk.CheckVersionRequest{Path: data, Version: 1},
		&zk.DeleteRequest{Path: gone, Version: -1},
	)
	wantErr(t, "Multi", err, nil)
	if len(res) != 5 {
		t.Fatalf("Multi returned %d results; want 5: %+v", len(res), res)
	}
	// ZooKeeper 3.8: every op of a multi carries the same zxid.
	zxid := z0 + 1
	dst := stat(t, c, data)
	wantEqual(t, "SetData Mzxid in the multi", dst.Mzxid, zxid)
	wantEqual(t, "results", res, []zk.MultiResponse{
		{String: base + "/new"},
		{String: base + "/seq-0000000004"},
		{Stat: &dst},
		{},
		{},
	})
	wantEqual(t, "new node Czxid", stat(t, c, base+"/new").Czxid, zxid)
	wantEqual(t, "sequential node Czxid", stat(t, c, base+"/seq-0000000004").Czxid, zxid)
	parent := stat(t, c, base)
	wantEqual(t, "parent Pzxid", parent.Pzxid, zxid)
	if ok, _, _ := c.Exists(gone); ok {
		t.Fatalf("%s still exists after the multi deleted it", gone)
	}
	if z := nextZxid(t, c, scratch); z != zxid+1 {
		t.Fatalf("zxid after a 5-op multi = %d; want %d (one zxid per multi)", z, zxid+1)
	}
}

func multiFailure(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	scratch := create(t, c, base+"/scratch", nil, 0)
	data := create(t, c, base+"/data", []byte("old"), 0)
	before := stat(t, c, base)
	dataBefore := stat(t, c, data)
	z0 := nextZxid(t, c, scratch)
	res, err := c.Multi(
		&zk.CreateRequest{Path: base + "/new", Acl: OpenACL},
		&zk.SetDataRequest{Path: data, Data: []byte("x"), Version: -1},
		&zk.SetDataRequest{Path: data, Data: []byte("y"), Version: 7},
		&zk.DeleteRequest{Path: data, Version: -1},
		&zk.CheckVersionRequest{Path: data, Version: 0},
	)
	wantErr(t, "Multi with a bad version at op 3", err, zk.ErrBadVersion)
	if len(res) != 5 {
		t.Fatalf("failed Multi returned %d results; want 5: %+v", len(res), res)
	}
	// ZooKeeper 3.8: ops before the failure report ZOK, ops after it
	// RuntimeInconsistency (-2), which go-zookeeper has no sentinel for.
	for i, r := range res {
		if r.Stat != nil || r.String != "" {
			t.Fatalf("failed Multi result %d = %+v; want no Stat and no String", i, r)
		}
	}
	wantErr(t, "result 1", res[0].Error, nil)
	wantErr(t, "result 2", res[1].Error, nil)
	wantErr(t, "result 3", res[2].Error, zk.ErrBadVersion)
	wantErrText(t, "result 4", res[3].Error, "unknown error: -2")
	wantErrText(t, "result 5", res[4].Error, "unknown error: -2")

	after := stat(t, c, base)
	wantStat(t, "parent after a failed multi", &after, before)
	dataAfter := stat(t, c, data)
	wantStat(t, "data node after a failed multi", &dataAfter, dataBefore)
	if ok, _, _ := c.Exists(base + "/new"); ok {
		t.Fatalf("a failed multi created %s", base+"/new")
	}
	// ZooKeeper 3.8: a failed multi still takes one zxid.
	if z := nextZxid(t, c, scratch); z != z0+2 {
		t.Fatalf("zxid after a failed multi = %d; want %d", z, z0+2)
	}
}

func multiFirstOpFails(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	res, err := c.Multi(
		&zk.CheckVersionRequest{Path: base + "/missing", Version: 0},
		&zk.CreateRequest{Path: base + "/new", Acl: OpenACL},
	)
	wantErr(t, "Multi checking a missing node", err, zk.ErrNoNode)
	if len(res) != 2 {
		t.Fatalf("Multi returned %d results; want 2: %+v", len(res), res)
	}
	wantErr(t, "result 1", res[0].Error, zk.ErrNoNode)
	wantErrText(t, "result 2", res[1].Error, "unknown error: -2")

	res, err = c.Multi(&zk.CreateRequest{Path: base, Acl: OpenACL})
	wantErr(t, "Multi creating an existing node", err, zk.ErrNodeExists)
	wantEqual(t, "results", res, []zk.MultiResponse{{Error: zk.ErrNodeExists}})
	res, err = c.Multi(&zk.CreateRequest{Path: base + "/x"})
	wantErr(t, "Multi create without ACL", err, zk.ErrInvalidACL)
	wantEqual(t, "results", res, []zk.MultiResponse{{Error: zk.ErrInvalidACL}})
	_, err = c.Multi(&zk.DeleteRequest{Path: "/zookeeper", Version: -1})
	wantErr(t, "Multi deleting /zookeeper", err, zk.ErrBadArguments)
}

func multiSeesOwnOps(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	res, err := c.Multi(
		&zk.CreateRequest{Path: base + "/p", Acl: OpenACL},
		&zk.CreateRequest{Path: base + "/p/c", Data: []byte("1"), Acl: OpenACL},
		&zk.SetDataRequest{Path: base + "/p/c", Data: []byte("2"), Version: 0},
		&zk.CheckVersionRequest{Path: base + "/p/c", Version: 1},
		&zk.DeleteRequest{Path: base + "/p/c", Version: 1},
		&zk.CreateRequest{Path: base + "/p/c", Data: []byte("3"), Acl: OpenACL},
		&zk.CreateRequest{Path: base + "/p/s-", Acl: OpenACL, Flags: zk.FlagSequence},
		&zk.CreateRequest{Path: base + "/p/s-", Acl: OpenACL, Flags: zk.FlagSequence},
	)
	wantErr(t, "Multi", err, nil)
	var paths []string
	for _, r := range res {
		if r.String != "" {
			paths = append(paths, r.String)
		}
	}
	// Sequence numbers count the creates before them, inside the multi too.
	wantEqual(t, "created paths", paths, []string{base + "/p", base + "/p/c", base + "/p/c", base + "/p/s-0000000002", base + "/p/s-0000000003"})
	data, _, _ := c.Get(base + "/p/c")
	wantEqual(t, "data", string(data), "3")
	children, _, _ := c.Children(base + "/p")
	slices.Sort(children)
	wantEqual(t, "children", children, []string{"c", "s-0000000002", "s-0000000003"})
}

func multiEmpty(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	scratch := create(t, c, env.Base()+"/scratch", nil, 0)
	z0 := nextZxid(t, c, scratch)
	res, err := c.Multi()
	wantErr(t, "empty Multi", err, nil)
	wantEqual(t, "empty Multi results", res, []zk.MultiResponse{})
	// ZooKeeper 3.8: even an empty multi is a transaction.
	if z := nextZxid(t, c, scratch); z != z0+2 {
		t.Fatalf("zxid after an empty multi = %d; want %d", z, z0+2)
	}
}

func multiUnknownOp(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	res, err := c.Multi(&zk.CreateRequest{Path: env.Base() + "/x", Acl: OpenACL}, zk.CreateRequest{Path: env.Base() + "/y"})
	wantErrText(t, "Multi with a non-pointer op", err, "unknown operation type zk.CreateRequest")
	wantEqual(t, "results", res, []zk.MultiResponse(nil))
	if ok, _, _ := c.Exists(env.Base() + "/x"); ok {
		t.Fatalf("a multi rejected by the client created a node")
	}
}
