package difftest_test

import (
	"testing"

	"github.com/zksim/zksim/zkfake/difftest"
)

// TestDistributionDrawsEveryClass holds the default configuration to
// drawing, within a thousand sequences, every call, every kind of path
// (the names the server refuses and the client sends among them), every
// ACL of the palette, every auth scheme and every size of data.
func TestDistributionDrawsEveryClass(t *testing.T) {
	var d difftest.Distribution
	for seed := uint64(1); seed <= 1000; seed++ {
		d.Add(difftest.Generate(seed, difftest.DefaultConfig()))
	}
	var want []string
	for _, k := range difftest.Kinds() {
		want = append(want, "call: "+string(k))
	}
	for _, k := range []difftest.Kind{difftest.Create, difftest.Set, difftest.Check, difftest.Delete} {
		want = append(want, "call: in a multi: "+string(k))
	}
	for _, p := range []string{"the base and its small tree", "a node an earlier create made", "names beyond ASCII, and spaces",
		"refused by the server, sent by the client", "refused by the client", "ZooKeeper's own nodes"} {
		want = append(want, "path: "+p)
	}
	for name := range difftest.ACLs() {
		want = append(want, "acl: "+name)
	}
	for _, s := range []string{"digest", "ip", "world", "bogus", "auth", "super"} {
		want = append(want, "auth: "+s)
	}
	for _, s := range []string{"none", "empty", "under 1 kB", "1 kB to 1 MB", "at or past jute.maxbuffer (1 MB)"} {
		want = append(want, "data: "+s)
	}
	for _, class := range want {
		if d.Count(class) == 0 {
			t.Errorf("%q never drawn in 1,000 sequences", class)
		}
	}
	if t.Failed() {
		t.Logf("the distribution:\n%s", d.String())
	}
}

// PathClass tells the kinds of path apart.
func TestPathClass(t *testing.T) {
	for path, want := range map[string]string{
		"a/x":                 "the base and its small tree",
		".":                   "the base and its small tree",
		"@3/c":                "a node an earlier create made",
		"a/日本":                "names beyond ASCII, and spaces",
		"a/\ue000":            "refused by the server, sent by the client",
		"a/\uffff":            "refused by the server, sent by the client",
		"a/😀":                 "refused by the server, sent by the client",
		"a//x":                "refused by the client",
		"a/../b":              "refused by the client",
		"":                    "refused by the client",
		"/zookeeper/q":        "ZooKeeper's own nodes",
		"/zookeeper/config":   "ZooKeeper's configuration node",
		"/zookeeper/config/x": "ZooKeeper's configuration node",
	} {
		if got := difftest.PathClass(path); got != want {
			t.Errorf("PathClass(%q) = %q, want %q", path, got, want)
		}
	}
}
