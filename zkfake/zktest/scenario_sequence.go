package zktest

import (
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

var sequenceScenarios = []Scenario{
	{"sequence/format", "sequence suffixes are %010d of the parent's create count, empty prefix allowed", sequenceFormat},
	{"sequence/deletes-do-not-advance", "deleting children moves Cversion but not the next sequence number", sequenceDeletesDoNotAdvance},
	{"sequence/failed-creates-do-not-advance", "failed creates move neither Cversion nor the next sequence number", sequenceFailedCreatesDoNotAdvance},
	{"sequence/cversion-formula", "reported Cversion is 2*creates - NumChildren", sequenceCversionFormula},
	{"sequence/ephemeral-sequential", "ephemeral sequential and protected ephemeral sequential names", sequenceEphemeral},
}

func seqName(prefix string, n int) string { return fmt.Sprintf("%s%010d", prefix, n) }

func sequenceFormat(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	p := env.Base() + "/q"
	create(t, c, p, nil, 0)
	for i := 0; i < 3; i++ {
		got := create(t, c, p+"/job-", nil, zk.FlagSequence)
		wantEqual(t, "sequential path", got, seqName(p+"/job-", i))
	}
	got := create(t, c, p+"/", nil, zk.FlagSequence)
	// ZooKeeper 3.8: a sequential create may end in "/": the name is the bare number.
	wantEqual(t, "sequential path with empty prefix", got, seqName(p+"/", 3))
	create(t, c, p+"/plain", nil, 0)
	got = create(t, c, p+"/job-", nil, zk.FlagSequence)
	wantEqual(t, "sequential after a plain create", got, seqName(p+"/job-", 5))
	// The counter is per parent.
	create(t, c, p+"/sub", nil, 0)
	got = create(t, c, p+"/sub/x", nil, zk.FlagSequence)
	wantEqual(t, "first sequential under a new parent", got, seqName(p+"/sub/x", 0))
}

func sequenceDeletesDoNotAdvance(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	p := env.Base() + "/q"
	create(t, c, p, nil, 0)
	first := create(t, c, p+"/n-", nil, zk.FlagSequence)
	create(t, c, p+"/plain", nil, 0)
	wantErr(t, "Delete", c.Delete(p+"/plain", -1), nil)
	wantErr(t, "Delete", c.Delete(first, -1), nil)
	st := stat(t, c, p)
	wantEqual(t, "reported Cversion after 2 creates and 2 deletes", st.Cversion, int32(4))
	// ZooKeeper 3.8: the suffix counts child creates only; deletes bump the reported Cversion but not the suffix.
	got := create(t, c, p+"/n-", nil, zk.FlagSequence)
	wantEqual(t, "sequential after deletes", got, seqName(p+"/n-", 2))
}

func sequenceFailedCreatesDoNotAdvance(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	p := env.Base() + "/q"
	create(t, c, p, nil, 0)
	create(t, c, p+"/taken", nil, 0)
	eph := create(t, c, p+"/eph", nil, zk.FlagEphemeral)
	// A plain node named like the next sequence number makes the sequential create fail.
	create(t, c, seqName(p+"/n-", 3), nil, 0)
	st0 := stat(t, c, p)

	_, err := c.Create(p+"/taken", nil, 0, OpenACL)
	wantErr(t, "Create of an existing node", err, zk.ErrNodeExists)
	_, err = c.Create(eph+"/x-", nil, zk.FlagSequence, OpenACL)
	wantErr(t, "sequential Create under an ephemeral", err, zk.ErrNoChildrenForEphemerals)
	// ZooKeeper 3.8: the suffix is taken from the create count even if that name exists: NodeExists.
	_, err = c.Create(p+"/n-", nil, zk.FlagSequence, OpenACL)
	wantErr(t, "sequential Create colliding with a plain node", err, zk.ErrNodeExists)
	_, err = c.Create(p+"/n-", nil, zk.FlagSequence, nil)
	wantErr(t, "sequential Create with an invalid ACL", err, zk.ErrInvalidACL)
	_, err = c.Multi(
		&zk.CreateRequest{Path: p + "/m-", Acl: OpenACL, Flags: zk.FlagSequence},
		&zk.CheckVersionRequest{Path: p, Version: 99},
	)
	wantErr(t, "failed Multi with a sequential create", err, zk.ErrBadVersion)

	st1 := stat(t, c, p)
	wantStat(t, "parent after failed creates", &st1, st0)
	// Still colliding: nothing advanced the counter.
	_, err = c.Create(p+"/n-", nil, zk.FlagSequence, OpenACL)
	wantErr(t, "sequential Create colliding again", err, zk.ErrNodeExists)
	create(t, c, p+"/other", nil, 0)
	got := create(t, c, p+"/n-", nil, zk.FlagSequence)
	wantEqual(t, "sequential after one more create", got, seqName(p+"/n-", 4))
}

func sequenceCversionFormula(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	p := env.Base() + "/q"
	create(t, c, p, nil, 0)
	creates, deletes := 0, 0
	var live []string
	for round := 0; round < 4; round++ {
		for i := 0; i < 3; i++ {
			live = append(live, create(t, c, p+"/c-", nil, zk.FlagSequence))
			creates++
		}
		for i := 0; i < round && len(live) > 0; i++ {
			wantErr(t, "Delete", c.Delete(live[0], -1), nil)
			live = live[1:]
			deletes++
		}
		st := stat(t, c, p)
		wantEqual(t, fmt.Sprintf("Cversion after %d creates, %d deletes", creates, deletes), st.Cversion, int32(creates+deletes))
		wantEqual(t, "NumChildren", st.NumChildren, int32(len(live)))
	}
	got := create(t, c, p+"/c-", nil, zk.FlagSequence)
	wantEqual(t, "next sequential", got, seqName(p+"/c-", creates))
}

var protectedName = regexp.MustCompile(`^_c_[0-9a-f]{32}-lock-[0-9]{10}$`)

func sequenceEphemeral(t *testing.T, env Env) {
	c, _ := env.Connect(t, 4*time.Second)
	p := env.Base() + "/q"
	create(t, c, p, nil, 0)
	got := create(t, c, p+"/e-", []byte("v"), zk.FlagEphemeralSequential)
	wantEqual(t, "ephemeral sequential path", got, seqName(p+"/e-", 0))
	wantEqual(t, "EphemeralOwner", stat(t, c, got).EphemeralOwner, c.SessionID())

	got, err := c.CreateProtectedEphemeralSequential(p+"/lock-", nil, OpenACL)
	wantErr(t, "CreateProtectedEphemeralSequential", err, nil)
	name := got[len(p)+1:]
	if !protectedName.MatchString(name) || name[len(name)-10:] != "0000000001" {
		t.Fatalf("protected name %q; want _c_<32 hex>-lock-0000000001", name)
	}
	children, _, _ := c.Children(p)
	if !slices.Contains(children, name) {
		t.Fatalf("Children = %v; want %s among them", children, name)
	}
}
