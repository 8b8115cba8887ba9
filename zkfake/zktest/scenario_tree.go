package zktest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

var treeScenarios = []Scenario{
	{"tree/root", "/ has zxid 0, time 0, the open ACL, and a Cversion of 2*creates-children", treeRoot},
	{"tree/zookeeper", "/zookeeper, /zookeeper/config and /zookeeper/quota exist with their 3.8 ACLs and stats", treeZookeeper},
	{"tree/create-get", "a created node reads back with its data, stat and ACL; children come back in any order", treeCreateGet},
	{"tree/nil-and-empty-data", "nil data reads back as nil, empty data as empty", treeNilAndEmptyData},
	{"tree/ephemeral", "an ephemeral node's owner is the creating session", treeEphemeral},
	{"tree/container-and-ttl", "container and TTL nodes exist and report EphemeralOwner 0", treeContainerAndTTL},
	{"tree/sync", "Sync returns the path it was given, even for a missing node", treeSync},
}

func treeRoot(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	data, st, err := c.Get("/")
	if err != nil {
		t.Fatalf("Get(/) = %v", err)
	}
	// ZooKeeper 3.8: the root is born with zxid 0 and ctime 0 and is never recreated.
	if st.Czxid != 0 || st.Ctime != 0 || st.EphemeralOwner != 0 || st.Aversion != 0 {
		t.Fatalf("Get(/) stat %+v; want Czxid 0, Ctime 0, EphemeralOwner 0, Aversion 0", *st)
	}
	wantEqual(t, "DataLength of /", st.DataLength, int32(len(data)))
	children, cst, err := c.Children("/")
	if err != nil {
		t.Fatalf("Children(/) = %v", err)
	}
	top := strings.SplitN(env.Base()[1:], "/", 2)[0]
	if !slices.Contains(children, "zookeeper") || !slices.Contains(children, top) {
		t.Fatalf("Children(/) = %v; want zookeeper and %s among them", children, top)
	}
	wantEqual(t, "NumChildren of /", cst.NumChildren, int32(len(children)))
	// ZooKeeper 3.8: the reported Cversion is 2*creates - NumChildren (a fresh / shows -1).
	if (cst.Cversion+cst.NumChildren)%2 != 0 || cst.Cversion+cst.NumChildren < 0 {
		t.Fatalf("/ has Cversion %d with %d children; want Cversion+NumChildren even and >= 0", cst.Cversion, cst.NumChildren)
	}
	if topStat := stat(t, c, "/"+top); cst.Pzxid < topStat.Czxid {
		t.Fatalf("/ Pzxid %d is older than its child /%s (czxid %d)", cst.Pzxid, top, topStat.Czxid)
	}
	acl, ast, err := c.GetACL("/")
	if err != nil {
		t.Fatalf("GetACL(/) = %v", err)
	}
	wantEqual(t, "GetACL(/)", acl, zk.WorldACL(zk.PermAll))
	wantStat(t, "GetACL(/) stat", ast, *cst)
}

func treeZookeeper(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	children, st, err := c.Children("/zookeeper")
	if err != nil {
		t.Fatalf("Children(/zookeeper) = %v", err)
	}
	// ZooKeeper 3.8: a fresh /zookeeper has exactly [config quota] and reports Cversion -2.
	if !slices.Contains(children, "config") || !slices.Contains(children, "quota") {
		t.Fatalf("Children(/zookeeper) = %v; want config and quota", children)
	}
	if st.Czxid != 0 || st.Ctime != 0 || st.EphemeralOwner != 0 || st.Aversion != 0 || (st.Cversion+st.NumChildren)%2 != 0 {
		t.Fatalf("/zookeeper stat %+v; want Czxid 0, Ctime 0, EphemeralOwner 0, Aversion 0, Cversion+NumChildren even", *st)
	}
	acl, _, err := c.GetACL("/zookeeper")
	wantErr(t, "GetACL(/zookeeper)", err, nil)
	wantEqual(t, "GetACL(/zookeeper)", acl, zk.WorldACL(zk.PermAll))

	data, st, err := c.Get("/zookeeper/config")
	wantErr(t, "Get(/zookeeper/config)", err, nil)
	// ZooKeeper 3.8: /zookeeper/config is read-only for everyone and reports Aversion -1.
	// Its data and Version differ: standalone "" and 0, an ensemble its member list and -1.
	if st.Czxid != 0 || st.Ctime != 0 || st.Aversion != -1 || st.Cversion != 0 || st.NumChildren != 0 || st.EphemeralOwner != 0 || st.DataLength != int32(len(data)) {
		t.Fatalf("/zookeeper/config stat %+v; want Czxid 0, Ctime 0, Aversion -1, Cversion 0, no children, DataLength %d", *st, len(data))
	}
	acl, _, err = c.GetACL("/zookeeper/config")
	wantErr(t, "GetACL(/zookeeper/config)", err, nil)
	wantEqual(t, "GetACL(/zookeeper/config)", acl, zk.WorldACL(zk.PermRead))

	_, st, err = c.Get("/zookeeper/quota")
	wantErr(t, "Get(/zookeeper/quota)", err, nil)
	if st.Czxid != 0 || st.Ctime != 0 || st.Aversion != 0 || st.EphemeralOwner != 0 {
		t.Fatalf("/zookeeper/quota stat %+v; want Czxid 0, Ctime 0, Aversion 0, EphemeralOwner 0", *st)
	}
	acl, _, err = c.GetACL("/zookeeper/quota")
	wantErr(t, "GetACL(/zookeeper/quota)", err, nil)
	wantEqual(t, "GetACL(/zookeeper/quota)", acl, zk.WorldACL(zk.PermAll))
}

func treeCreateGet(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	before := time.Now()
	got, err := c.Create(base+"/n", []byte("hello"), zk.FlagPersistent, OpenACL)
	after := time.Now()
	wantErr(t, "Create", err, nil)
	wantEqual(t, "Create path", got, base+"/n")
	data, st, err := c.Get(base + "/n")
	wantErr(t, "Get", err, nil)
	wantEqual(t, "Get data", string(data), "hello")
	wantStat(t, "Get stat of a new node", st, zk.Stat{
		Czxid: st.Czxid, Mzxid: st.Czxid, Pzxid: st.Czxid,
		Ctime: st.Ctime, Mtime: st.Ctime, DataLength: 5,
	})
	wantMillisNear(t, "Ctime", st.Ctime, before, after)
	acl, ast, err := c.GetACL(base + "/n")
	wantErr(t, "GetACL", err, nil)
	wantEqual(t, "GetACL", acl, OpenACL)
	wantStat(t, "GetACL stat", ast, *st)

	for _, name := range []string{"c", "a", "b"} {
		create(t, c, base+"/n/"+name, nil, zk.FlagPersistent)
	}
	children, cst, err := c.Children(base + "/n")
	wantErr(t, "Children", err, nil)
	// ZooKeeper 3.8: children come back in hash-set order, not sorted.
	slices.Sort(children)
	wantEqual(t, "Children (sorted)", children, []string{"a", "b", "c"})
	wantEqual(t, "Children stat NumChildren", cst.NumChildren, int32(3))
	leaf, _, err := c.Children(base + "/n/a")
	wantErr(t, "Children of a leaf", err, nil)
	wantEqual(t, "Children of a leaf", leaf, []string{})
}

func treeNilAndEmptyData(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	create(t, c, base+"/nil", nil, 0)
	create(t, c, base+"/empty", []byte{}, 0)
	data, _, err := c.Get(base + "/nil")
	wantErr(t, "Get", err, nil)
	if data != nil {
		t.Fatalf("Get of a node created with nil data = %#v; want nil", data)
	}
	data, _, err = c.Get(base + "/empty")
	wantErr(t, "Get", err, nil)
	if data == nil || len(data) != 0 {
		t.Fatalf("Get of a node created with empty data = %#v; want []byte{}", data)
	}
	set(t, c, base+"/empty", nil)
	data, st, _ := c.Get(base + "/empty")
	if data != nil || st.DataLength != 0 {
		t.Fatalf("after Set(nil): data %#v DataLength %d; want nil and 0", data, st.DataLength)
	}
}

func treeEphemeral(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	other, _ := env.Connect(t, 4*time.Second)
	p := create(t, c, env.Base()+"/e", []byte("x"), zk.FlagEphemeral)
	st := stat(t, other, p)
	wantEqual(t, "EphemeralOwner", st.EphemeralOwner, c.SessionID())
	wantStat(t, "ephemeral stat", &st, zk.Stat{
		Czxid: st.Czxid, Mzxid: st.Czxid, Pzxid: st.Czxid, Ctime: st.Ctime, Mtime: st.Ctime,
		EphemeralOwner: c.SessionID(), DataLength: 1,
	})
}

func treeContainerAndTTL(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	got, err := c.CreateContainer(base+"/container", []byte("c"), zk.FlagContainer, OpenACL)
	wantErr(t, "CreateContainer", err, nil)
	wantEqual(t, "CreateContainer path", got, base+"/container")
	st := stat(t, c, got)
	// ZooKeeper 3.8: container and TTL nodes hide their internal owner marker and report 0.
	wantStat(t, "container stat", &st, zk.Stat{
		Czxid: st.Czxid, Mzxid: st.Czxid, Pzxid: st.Czxid, Ctime: st.Ctime, Mtime: st.Ctime, DataLength: 1,
	})
	got, err = c.CreateTTL(base+"/ttl", []byte("t"), zk.FlagTTL, OpenACL, time.Hour)
	wantErr(t, "CreateTTL", err, nil)
	wantEqual(t, "CreateTTL path", got, base+"/ttl")
	st = stat(t, c, got)
	wantStat(t, "TTL stat", &st, zk.Stat{
		Czxid: st.Czxid, Mzxid: st.Czxid, Pzxid: st.Czxid, Ctime: st.Ctime, Mtime: st.Ctime, DataLength: 1,
	})
	got, err = c.CreateTTL(base+"/ttlseq-", nil, zk.FlagPersistentSequentialWithTTL, OpenACL, time.Hour)
	wantErr(t, "CreateTTL sequential", err, nil)
	wantEqual(t, "CreateTTL sequential path", got, base+"/ttlseq-0000000002")
}

func treeSync(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	got, err := c.Sync(env.Base())
	wantErr(t, "Sync", err, nil)
	wantEqual(t, "Sync path", got, env.Base())
	got, err = c.Sync(env.Base() + "/missing")
	// ZooKeeper 3.8: sync does not look the path up; a missing node is no error.
	wantErr(t, "Sync of a missing node", err, nil)
	wantEqual(t, "Sync path", got, env.Base()+"/missing")
	got, err = c.Sync("bad")
	wantErr(t, "Sync of an invalid path", err, zk.ErrInvalidPath)
	wantEqual(t, "Sync path on error", got, "")
}
