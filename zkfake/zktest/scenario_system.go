package zktest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

var systemScenarios = []Scenario{
	{"tree/system-nodes", "getData, exists, getACL and getChildren of /zookeeper and its children, byte for byte: the configuration text of the target's servers, every stat field, the ACLs", treeSystemNodes},
}

// Quorum is implemented by environments that know the static
// configuration their servers were started with: on an ensemble,
// /zookeeper/config holds its server lines, which differ from one
// ensemble to another (their addresses) and are told to no client in any
// other form.
type Quorum interface {
	// QuorumServers returns the servers of the configuration, whose lines
	// /zookeeper/config holds, or none for a standalone server.
	QuorumServers() ([]QuorumServer, error)
}

// QuorumServer is one server of an ensemble's configuration, as a zoo.cfg
// line server.ID=HOST:QUORUMPORT:ELECTIONPORT[:TYPE][;CLIENT] gives it.
type QuorumServer struct {
	ID           int64
	Host         string // as written, a name or an IP literal
	QuorumPort   int
	ElectionPort int
	Observer     bool
	// ClientAddr is the client address the line names after ";", as
	// host:port ("0.0.0.0:port" for a bare port), or "" when it names
	// none.
	ClientAddr string
}

// configLine is the line of /zookeeper/config for q, written out here from
// ZooKeeper 3.8's QuorumMaj.toString and QuorumServer.toString rather than
// taken from any implementation under test.
func configLine(q QuorumServer) string {
	host := q.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	role := "participant"
	if q.Observer {
		role = "observer"
	}
	line := fmt.Sprintf("server.%d=%s:%d:%d:%s", q.ID, host, q.QuorumPort, q.ElectionPort, role)
	if q.ClientAddr != "" {
		line += ";" + q.ClientAddr
	}
	return line
}

func treeSystemNodes(t *testing.T, env Env) {
	q, ok := env.(Quorum)
	if !ok {
		t.Skip("the environment does not know its servers' configuration")
	}
	servers, err := q.QuorumServers()
	if err != nil {
		t.Fatalf("the target's configuration: %v", err)
	}
	c, _ := env.Connect(t, 4*time.Second)

	// ZooKeeper 3.8: DataTree makes /, /zookeeper, /zookeeper/quota and
	// /zookeeper/config with new byte[0]: their data is empty, not null,
	// which go-zookeeper tells apart ([]byte{}, not nil).
	//
	// /zookeeper: zxids and times 0, the open ACL, at least its two
	// children. Others may have made and removed children of it
	// (errors/special-nodes does), which moves only its Cversion and Pzxid.
	data, st := readAll(t, c, "/zookeeper")
	wantEqual(t, "data of /zookeeper", data, []byte{})
	children, _, _ := c.Children("/zookeeper")
	if !slices.Contains(children, "config") || !slices.Contains(children, "quota") {
		t.Fatalf("/zookeeper: children %v; want [config quota] among them", children)
	}
	want := zk.Stat{NumChildren: int32(len(children)), Cversion: -int32(len(children)), Pzxid: st.Pzxid}
	if st.Pzxid != 0 {
		// ZooKeeper 3.8: Cversion is 2*creates - NumChildren (see
		// sequence/cversion-formula), and a child created once moves it.
		want.Cversion = st.Cversion
		if st.Cversion <= -st.NumChildren || (st.Cversion+st.NumChildren)%2 != 0 {
			t.Errorf("/zookeeper: Cversion %d with %d children and Pzxid %#x; want 2*creates-children", st.Cversion, st.NumChildren, st.Pzxid)
		}
	}
	wantStat(t, "/zookeeper", &st, want)
	wantACL(t, c, "/zookeeper", zk.WorldACL(zk.PermAll))

	// /zookeeper/quota: nothing in it and nothing changed, as long as
	// nobody set a quota (nothing in this suite does).
	data, st = readAll(t, c, "/zookeeper/quota")
	wantEqual(t, "data of /zookeeper/quota", data, []byte{})
	wantStat(t, "/zookeeper/quota", &st, zk.Stat{})
	wantACL(t, c, "/zookeeper/quota", zk.WorldACL(zk.PermAll))

	// /zookeeper/config: ZooKeeper 3.8, reconfigEnabled=false. A standalone
	// server leaves it as DataTree.addConfigNode made it: no data, Version
	// 0, Aversion -1 (its setACL passed version -1). An ensemble member
	// sets its data when it loads its database
	// (ZKDatabase.initConfigInZKDatabase): setData with version -1, the
	// configuration's version (0 for a static one) as zxid and its own
	// wall clock, so Version -1, Mzxid 0 and an Mtime of its start.
	before := time.Now()
	data, st = readAll(t, c, "/zookeeper/config")
	wantText := ""
	want = zk.Stat{Aversion: -1}
	if len(servers) > 0 {
		lines := make([]string, len(servers))
		for i, s := range servers {
			lines[i] = configLine(s) + "\n"
		}
		got := strings.SplitAfter(string(data), "\n")
		// The server lists its members in its HashMap's order, by id for
		// ids below 16; beyond that the test compares them as a set.
		if slices.ContainsFunc(servers, func(s QuorumServer) bool { return s.ID < 0 || s.ID >= 16 }) && len(got) == len(lines)+1 {
			slices.Sort(lines)
			slices.Sort(got[:len(lines)])
			data = []byte(strings.Join(got, ""))
		} else {
			slices.SortFunc(lines, func(a, b string) int { return idOf(a) - idOf(b) })
		}
		wantText = strings.Join(lines, "") + "version=0"
		want = zk.Stat{Mtime: st.Mtime, Version: -1, Aversion: -1, DataLength: int32(len(wantText))}
		// The member's clock is not the test's: the slack of wantMillisNear.
		if st.Mtime <= 0 || st.Mtime > before.UnixMilli()+2000 {
			t.Errorf("/zookeeper/config: Mtime %d; want the member's start, before %d", st.Mtime, before.UnixMilli())
		}
	}
	wantEqual(t, "data of /zookeeper/config", data, []byte(wantText))
	wantStat(t, "/zookeeper/config", &st, want)
	wantACL(t, c, "/zookeeper/config", zk.WorldACL(zk.PermRead))

	// The configuration is READ-only for everyone: every write there is
	// refused with NoAuth, but a delete, which the server refuses for
	// every system node first, with BadArguments.
	_, err = c.Set("/zookeeper/config", []byte("x"), -1)
	wantErr(t, "Set /zookeeper/config", err, zk.ErrNoAuth)
	_, err = c.SetACL("/zookeeper/config", zk.WorldACL(zk.PermAll), -1)
	wantErr(t, "SetACL /zookeeper/config", err, zk.ErrNoAuth)
	_, err = c.Create("/zookeeper/config/x", nil, 0, OpenACL)
	wantErr(t, "Create under /zookeeper/config", err, zk.ErrNoAuth)
	wantErr(t, "Delete /zookeeper/config", c.Delete("/zookeeper/config", -1), zk.ErrBadArguments)
	_, after := readAll(t, c, "/zookeeper/config")
	wantStat(t, "/zookeeper/config after the refused writes", &after, want)
}

// idOf is the id of a "server.ID=" line.
func idOf(line string) int {
	var id int
	fmt.Sscanf(line, "server.%d=", &id)
	return id
}

// readAll reads path with getData, exists, getACL and getChildren, checks
// that they agree on its stat and that it has the children the stat
// counts, and returns its data and stat.
func readAll(t *testing.T, c Conn, path string) ([]byte, zk.Stat) {
	t.Helper()
	data, st, err := c.Get(path)
	wantErr(t, "Get "+path, err, nil)
	ok, est, err := c.Exists(path)
	wantErr(t, "Exists "+path, err, nil)
	wantEqual(t, "Exists "+path, ok, true)
	_, ast, err := c.GetACL(path)
	wantErr(t, "GetACL "+path, err, nil)
	children, cst, err := c.Children(path)
	wantErr(t, "Children "+path, err, nil)
	for what, other := range map[string]*zk.Stat{"Exists": est, "GetACL": ast, "Children": cst} {
		wantStat(t, what+" "+path+" against Get's", other, *st)
	}
	wantEqual(t, "children of "+path+" against NumChildren", int32(len(children)), st.NumChildren)
	return data, *st
}

// wantACL checks path's ACL.
func wantACL(t *testing.T, c Conn, path string, want []zk.ACL) {
	t.Helper()
	acl, _, err := c.GetACL(path)
	wantErr(t, "GetACL "+path, err, nil)
	wantEqual(t, "GetACL "+path, acl, want)
}
