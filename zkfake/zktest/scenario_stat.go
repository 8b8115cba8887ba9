package zktest

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

var statScenarios = []Scenario{
	{"stat/create-updates-parent", "a child create sets the parent's Pzxid to its zxid and bumps Cversion and NumChildren only", statCreateUpdatesParent},
	{"stat/set", "Set bumps Version and sets Mzxid/Mtime, leaving Czxid, Ctime and Pzxid", statSet},
	{"stat/delete-updates-parent", "a child delete sets the parent's Pzxid and bumps its reported Cversion", statDeleteUpdatesParent},
	{"stat/setacl", "SetACL bumps Aversion only, yet consumes a zxid", statSetACL},
	{"stat/zxid-one-per-write", "successive writes of one session take successive zxids", statZxidOnePerWrite},
	{"stat/zxid-failed-writes", "a failed write consumes a zxid; reads and client-side rejections do not", statZxidFailedWrites},
}

func statCreateUpdatesParent(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	p0 := stat(t, c, base)
	child := create(t, c, base+"/child", []byte("ab"), 0)
	cst := stat(t, c, child)
	if cst.Czxid <= p0.Czxid {
		t.Fatalf("child Czxid %d not after parent Czxid %d", cst.Czxid, p0.Czxid)
	}
	p1 := stat(t, c, base)
	want := p0
	want.Pzxid = cst.Czxid
	want.Cversion = p0.Cversion + 1
	want.NumChildren = p0.NumChildren + 1
	wantStat(t, "parent after child create", &p1, want)
}

func statSet(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	p := create(t, c, env.Base()+"/n", []byte("a"), 0)
	s0 := stat(t, c, p)
	before := time.Now()
	s1 := set(t, c, p, []byte("abcd"))
	after := time.Now()
	want := s0
	want.Mzxid, want.Mtime, want.Version, want.DataLength = s1.Mzxid, s1.Mtime, 1, 4
	wantStat(t, "Set result", &s1, want)
	if s1.Mzxid != s0.Czxid+1 {
		t.Fatalf("Set Mzxid %d; want %d, the next zxid after the create", s1.Mzxid, s0.Czxid+1)
	}
	wantMillisNear(t, "Mtime", s1.Mtime, before, after)
	if s1.Mtime < s0.Ctime {
		t.Fatalf("Mtime %d before Ctime %d", s1.Mtime, s0.Ctime)
	}
	read := stat(t, c, p)
	wantStat(t, "Exists after Set", &read, s1)

	s2, err := c.Set(p, []byte("x"), 1)
	wantErr(t, "Set with the current version", err, nil)
	wantEqual(t, "Version", s2.Version, int32(2))
	// ZooKeeper 3.8: version -1 matches any version.
	s3, err := c.Set(p, nil, -1)
	wantErr(t, "Set with version -1", err, nil)
	wantEqual(t, "Version", s3.Version, int32(3))
	wantEqual(t, "DataLength", s3.DataLength, int32(0))
}

func statDeleteUpdatesParent(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	scratch := create(t, c, base+"/scratch", nil, 0)
	child := create(t, c, base+"/child", nil, 0)
	p0 := stat(t, c, base)
	wantErr(t, "Delete", c.Delete(child, 0), nil)
	deleteZxid := nextZxid(t, c, scratch) - 1
	p1 := stat(t, c, base)
	want := p0
	want.Pzxid = deleteZxid
	want.Cversion = p0.Cversion + 1
	want.NumChildren = p0.NumChildren - 1
	wantStat(t, "parent after child delete", &p1, want)
}

func statSetACL(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	scratch := create(t, c, base+"/scratch", nil, 0)
	p := create(t, c, base+"/n", []byte("d"), 0)
	s0 := stat(t, c, p)
	z0 := nextZxid(t, c, scratch)
	s1, err := c.SetACL(p, zk.WorldACL(zk.PermRead|zk.PermWrite|zk.PermAdmin), 0)
	wantErr(t, "SetACL", err, nil)
	want := s0
	want.Aversion = 1
	// ZooKeeper 3.8: SetACL changes neither Mzxid nor Mtime nor Version.
	wantStat(t, "SetACL result", s1, want)
	if z1 := nextZxid(t, c, scratch); z1 != z0+2 {
		t.Fatalf("zxid after SetACL = %d; want %d (SetACL takes one zxid)", z1, z0+2)
	}
	acl, ast, err := c.GetACL(p)
	wantErr(t, "GetACL", err, nil)
	wantEqual(t, "GetACL", acl, zk.WorldACL(zk.PermRead|zk.PermWrite|zk.PermAdmin))
	wantStat(t, "GetACL stat", ast, want)
	_, err = c.SetACL(p, OpenACL, 0)
	wantErr(t, "SetACL with a stale Aversion", err, zk.ErrBadVersion)
	s2, err := c.SetACL(p, OpenACL, -1)
	wantErr(t, "SetACL with version -1", err, nil)
	wantEqual(t, "Aversion", s2.Aversion, int32(2))
}

func statZxidOnePerWrite(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	a := create(t, c, base+"/a", nil, 0)
	sa := stat(t, c, a)
	b := create(t, c, base+"/b", nil, 0)
	sb := stat(t, c, b)
	wantEqual(t, "second create's zxid", sb.Czxid, sa.Czxid+1)
	s := set(t, c, a, []byte("x"))
	wantEqual(t, "Set's zxid", s.Mzxid, sb.Czxid+1)
	wantErr(t, "Delete", c.Delete(b, -1), nil)
	s = set(t, c, a, []byte("y"))
	wantEqual(t, "zxid after a delete", s.Mzxid, sb.Czxid+3)
}

func statZxidFailedWrites(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	base := env.Base()
	scratch := create(t, c, base+"/scratch", nil, 0)
	full := create(t, c, base+"/full", nil, 0)
	create(t, c, full+"/child", nil, 0)
	eph := create(t, c, base+"/eph", nil, zk.FlagEphemeral)

	failed := []struct {
		what string
		op   func() error
		want error
	}{
		{"Create of an existing node", func() error { _, err := c.Create(full, nil, 0, OpenACL); return err }, zk.ErrNodeExists},
		{"Create under a missing parent", func() error { _, err := c.Create(base+"/no/x", nil, 0, OpenACL); return err }, zk.ErrNoNode},
		{"Create under an ephemeral", func() error { _, err := c.Create(eph+"/x", nil, 0, OpenACL); return err }, zk.ErrNoChildrenForEphemerals},
		{"Set with a wrong version", func() error { _, err := c.Set(full, nil, 7); return err }, zk.ErrBadVersion},
		{"Set of a missing node", func() error { _, err := c.Set(base+"/no", nil, -1); return err }, zk.ErrNoNode},
		{"Delete of a missing node", func() error { return c.Delete(base+"/no", -1) }, zk.ErrNoNode},
		{"Delete of a node with children", func() error { return c.Delete(full, -1) }, zk.ErrNotEmpty},
		{"Delete of /zookeeper", func() error { return c.Delete("/zookeeper", -1) }, zk.ErrBadArguments},
		{"Create with an invalid ACL", func() error { _, err := c.Create(base+"/acl", nil, 0, nil); return err }, zk.ErrInvalidACL},
	}
	for _, f := range failed {
		z0 := nextZxid(t, c, scratch)
		wantErr(t, f.what, f.op(), f.want)
		// ZooKeeper 3.8: a failed write is logged as an error txn and consumes a zxid.
		if z1 := nextZxid(t, c, scratch); z1 != z0+2 {
			t.Fatalf("after a failed %s the next write got zxid %d; want %d (failed writes take a zxid)", f.what, z1, z0+2)
		}
	}

	notWrites := []struct {
		what string
		op   func() error
	}{
		{"Get", func() error { _, _, err := c.Get(full); return err }},
		{"Exists of a missing node", func() error { _, _, err := c.Exists(base + "/no"); return err }},
		{"Children", func() error { _, _, err := c.Children(full); return err }},
		{"GetACL", func() error { _, _, err := c.GetACL(full); return err }},
		{"Sync", func() error { _, err := c.Sync(full); return err }},
		{"Get of a missing node", func() error {
			if _, _, err := c.Get(base + "/no"); err != zk.ErrNoNode {
				return err
			}
			return nil
		}},
		{"Create with an invalid path", func() error {
			if _, err := c.Create(base+"/bad/", nil, 0, OpenACL); err != zk.ErrInvalidPath {
				return err
			}
			return nil
		}},
	}
	for _, f := range notWrites {
		z0 := nextZxid(t, c, scratch)
		wantErr(t, f.what, f.op(), nil)
		if z1 := nextZxid(t, c, scratch); z1 != z0+1 {
			t.Fatalf("after %s the next write got zxid %d; want %d (reads take no zxid)", f.what, z1, z0+1)
		}
	}
}
