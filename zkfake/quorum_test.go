package zkfake_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
)

// ciZooCfg is the configuration .ci/ensemble writes for member 1 of an
// ensemble whose client ports start at 24181.
const ciZooCfg = `tickTime=200
dataDir=/tmp/zk/member1/data
clientPort=24181
clientPortAddress=127.0.0.1
standaloneEnabled=false
server.1=127.0.0.1:24881:25881
server.2=127.0.0.1:24882:25882
server.3=127.0.0.1:24883:25883
`

// ciConfigText is what each member of that ensemble (ZooKeeper 3.8.0,
// reconfigEnabled=false) returns for getData of /zookeeper/config: the
// server lines with their type and without the static client port, then
// the version, with no newline at the end.
const ciConfigText = "server.1=127.0.0.1:24881:25881:participant\n" +
	"server.2=127.0.0.1:24882:25882:participant\n" +
	"server.3=127.0.0.1:24883:25883:participant\n" +
	"version=0"

// getConfig reads /zookeeper/config from a session on member, with its
// stat and ACL, on a fresh server made with opts, at the bubble's start.
func getConfig(t *testing.T, member int, opts ...zkfake.Option) (string, zk.Stat, []zk.ACL, time.Time) {
	var data []byte
	var st *zk.Stat
	var acl []zk.ACL
	var start time.Time
	synctest.Test(t, func(t *testing.T) {
		start = time.Now()
		srv := zkfake.NewServer(opts...)
		defer srv.Close()
		c, _, err := srv.Connect(10*time.Second, zkfake.WithMember(member))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if data, st, err = c.Get("/zookeeper/config"); err != nil {
			t.Fatal(err)
		}
		if acl, _, err = c.GetACL("/zookeeper/config"); err != nil {
			t.Fatal(err)
		}
	})
	return string(data), *st, acl, start
}

func TestConfigNodeOfAStaticEnsemble(t *testing.T) {
	servers, err := zkfake.ParseZooCfg(ciZooCfg)
	if err != nil {
		t.Fatal(err)
	}
	for member := range 3 {
		data, st, acl, start := getConfig(t, member, zkfake.WithQuorum(servers))
		if data != ciConfigText {
			t.Errorf("member %d: data %q, want %q", member, data, ciConfigText)
		}
		want := zk.Stat{Mtime: start.UnixMilli(), Version: -1, Aversion: -1, DataLength: int32(len(ciConfigText))}
		if st != want {
			t.Errorf("member %d: stat %+v, want %+v", member, st, want)
		}
		if len(acl) != 1 || acl[0] != zk.WorldACL(zk.PermRead)[0] {
			t.Errorf("member %d: ACL %v, want world:anyone READ", member, acl)
		}
	}
}

func TestConfigNodeOfAStandaloneServer(t *testing.T) {
	data, st, acl, _ := getConfig(t, 0)
	if want := (zk.Stat{Aversion: -1}); data != "" || st != want {
		t.Errorf("standalone: data %q stat %+v, want \"\" and %+v", data, st, want)
	}
	if len(acl) != 1 || acl[0] != zk.WorldACL(zk.PermRead)[0] {
		t.Errorf("standalone: ACL %v, want world:anyone READ", acl)
	}
}

// An ensemble made with WithEnsemble alone lists the fake's own address
// as every member's client address, so that a client that reconnects to
// what it reads there (Curator's EnsembleTracker) reaches the fake.
func TestConfigNodeOfWithEnsembleListsOwnAddress(t *testing.T) {
	srv := zkfake.NewServer(zkfake.WithEnsemble(2), zkfake.WithAddr("127.0.0.1:4444"))
	defer srv.Close()
	want := "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:4444\n" +
		"server.2=127.0.0.1:2889:3889:participant;127.0.0.1:4444\n" +
		"version=0"
	for _, n := range srv.Znodes() {
		if n.Path == "/zookeeper/config" && string(n.Data) != want {
			t.Errorf("data %q, want %q", n.Data, want)
		}
	}
	if got := srv.Quorum(); len(got) != 2 || got[1].ClientAddr != "127.0.0.1:4444" {
		t.Errorf("Quorum() = %+v", got)
	}
	if got := zkfake.NewServer().Quorum(); got != nil {
		t.Errorf("a standalone server's Quorum() = %+v, want none", got)
	}
}

// Reset makes the server as a new one: its members load the
// configuration again, at the time of the reset.
func TestConfigNodeAfterReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithEnsemble(3))
		defer srv.Close()
		time.Sleep(time.Minute)
		srv.Reset()
		c, _, err := srv.Connect(10*time.Second, zkfake.WithMember(2))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		data, st, err := c.Get("/zookeeper/config")
		if err != nil || !strings.HasSuffix(string(data), "\nversion=0") || st.Mtime != time.Now().UnixMilli() || st.Version != -1 {
			t.Errorf("after Reset: %q %+v %v, want the configuration loaded now", data, st, err)
		}
	})
}

func TestParseZooCfgForms(t *testing.T) {
	servers, err := zkfake.ParseZooCfg(`# comment
server.17 = host-a:2888:3888:observer;2181
server.1=[::1]:2888:3888;[::1]:2181
server.2=10.0.0.2:2888:3888:participant;10.0.0.2:2181
`)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, q := range servers {
		lines = append(lines, q.String())
	}
	want := []string{"host-a:2888:3888:observer;0.0.0.0:2181", "[::1]:2888:3888:participant;[::1]:2181", "10.0.0.2:2888:3888:participant;10.0.0.2:2181"}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("lines %q, want %q", lines, want)
	}
	// Ids 1 and 17 share a bucket of the server's 16-slot HashMap, which
	// lists it before id 2's.
	srv := zkfake.NewServer(zkfake.WithQuorum(servers))
	defer srv.Close()
	var ids []int64
	for _, q := range srv.Quorum() {
		ids = append(ids, q.ID)
	}
	if len(ids) != 3 || ids[0] != 1 || ids[1] != 17 || ids[2] != 2 {
		t.Errorf("order %v, want [1 17 2]", ids)
	}
	if srv.Members() != 2 {
		t.Errorf("%d members, want one per participant (2)", srv.Members())
	}
	for _, bad := range []string{
		"server.x=h:1:2", "server.1=h:1", "server.1=h:1:1", "server.1=h:1:2:leader",
		"server.1=h:1:2|g:1:2", "server.1=h:1:2;a:b:3", "server.1=h:1:2\nserver.1=h:3:4",
	} {
		if _, err := zkfake.ParseZooCfg(bad); err == nil {
			t.Errorf("ParseZooCfg(%q) succeeded, want an error", bad)
		}
	}
}
