package wire_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/wire"
)

// TestHostileFramesCloseOnlyTheirConnection sends frames no client should
// send; each closes its own connection, and a session on another connection
// carries on with its state intact.
func TestHostileFramesCloseOnlyTheirConnection(t *testing.T) {
	env := serve(t)
	addr := env.l.Addr().String()
	good, _ := env.dial(t, 4*time.Second)
	defer good.Close()
	if _, err := good.Create("/keep", []byte("v"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	session := good.SessionID()

	request := func(body []byte) []byte {
		return cat(frame(connectBody(4000, 0, make([]byte, 16))), frame(body))
	}
	cases := map[string][]byte{
		"negative length":                  be32(-5),
		"length over jute.maxbuffer":       cat(be32(wire.MaxFrameSize+1), make([]byte, 64)),
		"huge length":                      be32(0x7fffffff),
		"truncated connect":                frame([]byte{0, 0, 0}),
		"connect with a forged passwd len": frame(cat(be32(0), be64(0), be32(4000), be64(0), be32(1<<30))),
		"request header cut short":         request([]byte{0, 0, 0, 1, 0}),
		"create without its acl":           request(cat(be32(1), be32(1), str("/x"), be32(-1))),
		"getChildren with a forged count":  request(cat(be32(1), be32(101), be64(0), be32(0x7fffffff))),
		"acl vector count over the frame":  request(cat(be32(1), be32(1), str("/x"), be32(0), be32(1000000))),
		"string length past the end":       request(cat(be32(1), be32(4), be32(1000), []byte("/a"))),
		"multi with an unknown op":         request(cat(be32(1), be32(14), be32(99), []byte{0}, be32(-1))),
		"multi with no done header":        request(cat(be32(1), be32(14), be32(2), []byte{0}, be32(-1), str("/keep"), be32(-1))),
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			c := dialRaw(t, addr)
			c.write(bad)
			c.wantClosed(name)
		})
	}
	// A connection that stops halfway through a frame.
	c := dialRaw(t, addr)
	c.write(cat(be32(100), []byte("abc")))
	c.nc.Close()

	data, _, err := good.Get("/keep")
	if err != nil || string(data) != "v" {
		t.Fatalf("Get on the good session after the hostile frames = %q, %v", data, err)
	}
	if good.SessionID() != session {
		t.Fatalf("good session changed from %#x to %#x", session, good.SessionID())
	}
	if got := env.srv.Ephemerals(session); len(got) != 1 {
		t.Fatalf("good session's ephemerals = %v", got)
	}
}

// TestConnectionLimit: connections over the cap are closed at once, as the
// real server closes those over maxClientCnxns; a freed slot is usable.
func TestConnectionLimit(t *testing.T) {
	srv := zkfake.NewServer(zkfake.WithTickTime(testTick))
	defer srv.Close()
	l, err := wire.Listen(srv, "127.0.0.1:0", wire.WithMaxConnections(2))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := l.Addr().String()
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	a.connect(4000, 0, make([]byte, 16))
	b.connect(4000, 0, make([]byte, 16))
	over := dialRaw(t, addr)
	over.wantClosed("third connection over a cap of two")
	a.nc.Close()
	// The slot frees once the server has seen a's close.
	deadline := time.Now().Add(30 * time.Second)
	for {
		c := dialRaw(t, addr)
		c.nc.SetWriteDeadline(time.Now().Add(time.Second))
		c.nc.Write(frame(connectBody(4000, 0, make([]byte, 16))))
		c.nc.SetReadDeadline(time.Now().Add(time.Second))
		var n [4]byte
		if _, err := io.ReadFull(c.nc, n[:]); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no connection accepted after one of two closed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDroppedConnectionKeepsSession: a connection dropped without
// closeSession leaves the session and its ephemerals; the client resumes
// it with its id and password within the timeout; after the timeout it is
// expired and the reconnect gets the zero answer.
func TestDroppedConnectionKeepsSession(t *testing.T) {
	env := serve(t)
	addr := env.l.Addr().String()
	c := dialRaw(t, addr)
	timeout, id, passwd := c.connect(400, 0, make([]byte, 16))
	if timeout != 400 {
		t.Fatalf("negotiated timeout %dms, want 400", timeout)
	}
	create := cat(be32(1), be32(1), str("/eph"), be32(0), be32(1), be32(31), str("world"), str("anyone"), be32(int32(zk.FlagEphemeral)))
	c.write(frame(create))
	if r := c.read(); int32(binary.BigEndian.Uint32(r[12:])) != 0 {
		t.Fatalf("create answered with error %d", int32(binary.BigEndian.Uint32(r[12:])))
	}
	c.nc.Close()

	again := dialRaw(t, addr)
	_, resumed, _ := again.connect(400, id, passwd)
	if resumed != id {
		t.Fatalf("reconnect got session %#x, want %#x", resumed, id)
	}
	if got := env.srv.Ephemerals(id); len(got) != 1 {
		t.Fatalf("ephemerals after reconnect = %v", got)
	}
	wrong := dialRaw(t, addr)
	if _, s, _ := wrong.connect(400, id, make([]byte, 16)); s != 0 {
		t.Fatalf("reconnect with a wrong password got session %#x, want 0", s)
	}
	again.nc.Close()

	deadline := time.Now().Add(30 * time.Second)
	for len(env.srv.Ephemerals(id)) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("session of a dropped connection not expired after 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	late := dialRaw(t, addr)
	if timeout, s, _ := late.connect(400, id, passwd); s != 0 || timeout != 0 {
		t.Fatalf("reconnect after expiry got timeout %d session %#x, want 0 and 0", timeout, s)
	}
}

// fourLetterWord sends a command and returns the server's whole answer.
func fourLetterWord(t *testing.T, addr, word string) string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write([]byte(word)); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(nc)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestFourLetterWords checks ruok, srvr, stat and mntr against the real
// server's format (as `echo srvr | nc` shows it on the dev server).
func TestFourLetterWords(t *testing.T) {
	env := serve(t)
	addr := env.l.Addr().String()
	c, _ := env.dial(t, 4*time.Second)
	defer c.Close()
	if _, err := c.Create("/n", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if got := fourLetterWord(t, addr, "ruok"); got != "imok" {
		t.Errorf("ruok = %q, want imok", got)
	}
	zxid := fmt.Sprintf("Zxid: 0x%x", env.srv.Zxid())
	srvr := fourLetterWord(t, addr, "srvr")
	wantPrefixes(t, "srvr", srvr, []string{
		"Zookeeper version: 3.8.0", "Latency min/avg/max: ", "Received: ", "Sent: ",
		"Connections: 2", "Outstanding: 0", zxid, "Mode: standalone", "Node count: 5",
	})
	stat := fourLetterWord(t, addr, "stat")
	wantPrefixes(t, "stat", stat, []string{
		"Zookeeper version: 3.8.0", "Clients:", " /127.0.0.1:", " /127.0.0.1:", "",
		"Latency min/avg/max: ", "Received: ", "Sent: ", "Connections: 2", "Outstanding: 0",
		zxid, "Mode: standalone", "Node count: 5",
	})
	mntr := fourLetterWord(t, addr, "mntr")
	for _, line := range []string{"zk_version\t3.8.0", "zk_server_state\tstandalone", "zk_znode_count\t5\n", "zk_global_sessions\t1\n", "zk_num_alive_connections\t2\n"} {
		if !strings.Contains(mntr, line) {
			t.Errorf("mntr lacks %q:\n%s", line, mntr)
		}
	}
	// Four bytes that are no word are read as a frame length and refused.
	if got := fourLetterWord(t, addr, "xyzw"); got != "" {
		t.Errorf("xyzw = %q, want the connection closed with no answer", got)
	}
}

// TestMoreFourLetterWords checks the other words a client or an operator
// asks for against the shapes a standalone ZooKeeper 3.8.0 gives with two
// sessions, each with an ephemeral node and data watches, and a
// connection without a session (the one asking): the same lines, in the
// same order, with the fake's values. As on the real server, wchs, wchc
// and wchp show data watches (getData, exists) only.
func TestMoreFourLetterWords(t *testing.T) {
	env := serve(t)
	addr := env.l.Addr().String()
	a, _ := env.dial(t, 4*time.Second)
	defer a.Close()
	b, _ := env.dial(t, 4*time.Second)
	defer b.Close()
	acl := zk.WorldACL(zk.PermAll)
	for _, step := range []error{
		must(a.Create("/w4", []byte("x"), 0, acl)),
		must(a.Create("/w4/e1", nil, zk.FlagEphemeral, acl)),
		must(b.Create("/w4/e2", nil, zk.FlagEphemeral, acl)),
		mustW(a.GetW("/w4")),
		mustW(a.ChildrenW("/w4")),
		mustW(b.ExistsW("/w4/nope")),
		mustW(b.GetW("/w4")),
	} {
		if step != nil {
			t.Fatal(step)
		}
	}
	sa, sb := fmt.Sprintf("0x%x", a.SessionID()), fmt.Sprintf("0x%x", b.SessionID())
	checkDump(t, strings.Split(strings.TrimSuffix(fourLetterWord(t, addr, "dump"), "\n"), "\n"), sa, sb)
	for word, want := range map[string][]string{
		"envi": {"Environment:", "zookeeper.version=3.8.0-zkfake, built on .*", "host.name=.*", "java.version=.*", "java.vendor=.*",
			"java.home=.*", "java.class.path=.*", "java.library.path=.*", "java.io.tmpdir=.*", "java.compiler=.*", "os.name=.*",
			"os.arch=.*", "os.version=.*", "user.name=.*", "user.home=.*", "user.dir=.*", "os.memory.free=\\d+MB",
			"os.memory.max=\\d+MB", "os.memory.total=\\d+MB"},
		"conf": {"clientPort=\\d+", "secureClientPort=-1", "dataDir=.*", "dataDirSize=\\d+", "dataLogDir=.*", "dataLogSize=\\d+",
			"tickTime=200", "maxClientCnxns=60", "minSessionTimeout=400", "maxSessionTimeout=4000", "clientPortListenBacklog=-1", "serverId=0"},
		"cons": {
			` /127\.0\.0\.1:\d+\[[01]\]\(queued=0,recved=\d+,sent=\d+(,sid=0x[0-9a-f]+,lop=[A-Z]+,est=\d+,to=4000,lcxid=0x[0-9a-f]+,lzxid=0x[0-9a-f]+,lresp=\d+,llat=\d+,minlat=\d+,avglat=\d+,maxlat=\d+)?\)`,
			"same", "same", ""},
		"wchs": {"2 connections watching 2 paths", "Total watches:3"},
		"wchc": {sa, "\\t/w4", sb, "\\t/w4", "\\t/w4/nope", ""},
		"wchp": {"/w4", "\\t" + sa, "\\t" + sb, "/w4/nope", "\\t" + sb, ""},
		"isro": {"rw"},
		"srst": {"Server stats reset."},
		"crst": {"Connection stats reset."},
		"dirs": {"datadir_size: \\d+", "logdir_size: \\d+"},
		"gtmk": {"306"},
	} {
		got := fourLetterWord(t, addr, word)
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		if len(lines) != len(want) {
			t.Errorf("%s answered %d lines, want %d:\n%s", word, len(lines), len(want), got)
			continue
		}
		last := ""
		for i, w := range want {
			if w == "same" {
				w = last
			}
			last = w
			if !regexp.MustCompile("^" + w + "$").MatchString(lines[i]) {
				t.Errorf("%s line %d = %q, want %s", word, i+1, lines[i], w)
			}
		}
	}
}

// checkDump checks dump's answer for two sessions, each with one
// ephemeral node, and three connections (one not logged in). The server
// files sessions and connections by the tick they expire at, so two of
// them made in different ticks are in two sets: how many sets there are
// varies from run to run, on a real server too.
func checkDump(t *testing.T, lines []string, sa, sb string) {
	t.Helper()
	date := `\w{3} \w{3} \d\d \d\d:\d\d:\d\d UTC \d{4}`
	i := 0
	line := func(want string) []string {
		if i >= len(lines) {
			t.Errorf("dump ends at line %d, want %s:\n%s", i+1, want, strings.Join(lines, "\n"))
			return nil
		}
		m := regexp.MustCompile("^" + want + "$").FindStringSubmatch(lines[i])
		if m == nil {
			t.Errorf("dump line %d = %q, want %s", i+1, lines[i], want)
		}
		i++
		return m
	}
	// sets reads a header that gives the count of sets, then each set:
	// its size and when it expires, and its members, total in all.
	sets := func(header, member string, total int) {
		m := line(header)
		if m == nil {
			return
		}
		n, _ := strconv.Atoi(m[1])
		members := 0
		for range n {
			m := line(`(\d+) expire at ` + date + `:`)
			if m == nil {
				return
			}
			k, _ := strconv.Atoi(m[1])
			for range k {
				line(member)
			}
			members += k
		}
		if members != total {
			t.Errorf("dump: %d in the sets after %q, want %d", members, header, total)
		}
	}
	line("SessionTracker dump:")
	sets(`Session Sets \((\d)\)/\(2\):`, `\t0x[0-9a-f]+`, 2)
	for _, want := range []string{"ephemeral nodes dump:", `Sessions with Ephemerals \(2\):`, sa + ":", "\t/w4/e1", sb + ":", "\t/w4/e2", "Connections dump:"} {
		line(want)
	}
	sets(`Connections Sets \((\d)\)/\(3\):`, `\tip: /127\.0\.0\.1:\d+ sessionId: 0x[0-9a-f]+`, 3)
	if i != len(lines) {
		t.Errorf("dump answered %d lines, want %d:\n%s", len(lines), i, strings.Join(lines, "\n"))
	}
}

func must(_ string, err error) error { return err }

func mustW[T any](_ T, _ *zk.Stat, _ <-chan zk.Event, err error) error { return err }

// TestFourLetterWordWhitelist: a known word off the whitelist is answered
// with the real server's refusal, and the connection closed.
func TestFourLetterWordWhitelist(t *testing.T) {
	srv := zkfake.NewServer()
	defer srv.Close()
	l, err := wire.Listen(srv, "127.0.0.1:0", wire.WithFourLetterWords("ruok"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := l.Addr().String()
	if got := fourLetterWord(t, addr, "ruok"); got != "imok" {
		t.Errorf("ruok = %q, want imok", got)
	}
	if got, want := fourLetterWord(t, addr, "envi"), "envi is not executed because it is not in the whitelist.\n"; got != want {
		t.Errorf("envi = %q, want %q", got, want)
	}
	if got := fourLetterWord(t, addr, "srvr"); !strings.HasPrefix(got, "Zookeeper version: ") {
		t.Errorf("srvr = %q: srvr is always on the whitelist", got)
	}
}

// wantPrefixes checks that the answer's lines start with want's, in order,
// and that it ends with a newline.
func wantPrefixes(t *testing.T, word, got string, want []string) {
	t.Helper()
	if !strings.HasSuffix(got, "\n") {
		t.Errorf("%s answer does not end with a newline: %q", word, got)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%s answered %d lines, want %d:\n%s", word, len(lines), len(want), got)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("%s line %d = %q, want prefix %q", word, i+1, lines[i], w)
		}
	}
}

// FuzzServeFrame sends an arbitrary frame on a fresh session of a live
// listener; whatever the frame does (it may even delete nodes, as any
// client may), the listener must keep serving: a bystander session still
// answers, with the same session id, which the server still holds.
func FuzzServeFrame(f *testing.F) {
	f.Add(cat(be32(1), be32(4), str("/"), []byte{1}))
	f.Add(cat(be32(1), be32(1), str("/f"), be32(1), []byte("x"), be32(1), be32(31), str("world"), str("anyone"), be32(1)))
	f.Add(cat(be32(1), be32(14), be32(2), []byte{0}, be32(-1), str("/bystander"), be32(-1), be32(-1), []byte{1}, be32(-1)))
	f.Add(cat(be32(-8), be32(101), be64(0), be32(1), str("/a"), be32(0), be32(-1)))
	f.Add(cat(be32(1), be32(-11)))
	f.Add(be32(0x7fffffff))
	env := serve(f)
	addr := env.l.Addr().String()
	bystander, _ := env.dial(f, 4*time.Second)
	defer bystander.Close()
	session := bystander.SessionID()
	f.Fuzz(func(t *testing.T, body []byte) {
		c := dialRaw(t, addr)
		c.connect(4000, 0, make([]byte, 16))
		c.nc.SetWriteDeadline(time.Now().Add(time.Second))
		c.nc.Write(frame(body))
		c.nc.Close()
		if ok, _, err := bystander.Exists("/"); err != nil || !ok {
			t.Fatalf("bystander after the frame: exists(/)=%v err=%v", ok, err)
		}
		if bystander.SessionID() != session || !slices.Contains(env.srv.Sessions(), session) {
			t.Fatalf("bystander's session %#x lost (now %#x; server holds %v)", session, bystander.SessionID(), env.srv.Sessions())
		}
	})
}

// TestUnknownOpClosesTheConnection: the real 3.8 server answers an op code
// it does not know with ZUNIMPLEMENTED (-6) and zxid -1, then closes the
// connection (checked against the dev server with a raw client).
func TestUnknownOpClosesTheConnection(t *testing.T) {
	env := serve(t)
	c := dialRaw(t, env.l.Addr().String())
	c.connect(4000, 0, make([]byte, 16))
	c.write(frame(cat(be32(2), be32(999), str("/"))))
	want := cat(be32(2), be64(-1), be32(-6))
	if got := c.read(); string(got) != string(want) {
		t.Fatalf("reply to op 999 = %x, want %x", got, want)
	}
	c.wantClosed("after an unknown op")
}

// TestConnectResponseReadOnlyFlag: the real server appends the readOnly
// flag to its connect response only when the client sent one (checked
// against the dev server): 36 bytes for go-zookeeper, 37 for the Java client.
func TestConnectResponseReadOnlyFlag(t *testing.T) {
	env := serve(t)
	for _, tc := range []struct {
		readOnly []byte
		want     int
	}{{nil, 36}, {[]byte{0}, 37}} {
		c := dialRaw(t, env.l.Addr().String())
		c.write(frame(cat(connectBody(4000, 0, make([]byte, 16)), tc.readOnly)))
		if got := len(c.read()); got != tc.want {
			t.Errorf("connect response with readOnly %v sent: %d bytes, want %d", tc.readOnly, got, tc.want)
		}
	}
}

// TestSetWatchesFiresWhatChanged: setWatches for watches the session does
// not hold on the server (as after a reconnect to a server that lost them)
// fires at once those whose nodes changed after the client's zxid, as the
// real server does, and sets the others, which fire on the next change.
func TestSetWatchesFiresWhatChanged(t *testing.T) {
	env := serve(t)
	writer, _ := env.dial(t, 4*time.Second)
	defer writer.Close()
	acl := zk.WorldACL(zk.PermAll)
	for _, p := range []string{"/old", "/changed"} {
		if _, err := writer.Create(p, nil, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	seen := env.srv.Zxid()
	if _, err := writer.Set("/changed", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}

	c := dialRaw(t, env.l.Addr().String())
	c.connect(4000, 0, make([]byte, 16))
	strs := func(ss ...string) []byte {
		out := be32(int32(len(ss)))
		for _, s := range ss {
			out = append(out, str(s)...)
		}
		return out
	}
	c.write(frame(cat(be32(-8), be32(101), be64(seen),
		strs("/old", "/changed"), strs("/new"), strs("/missing"))))
	notification := func(typ zk.EventType, path string) string {
		return string(cat(be32(-1), be64(-1), be32(0), be32(int32(typ)), be32(3), str(path)))
	}
	got := map[string]bool{}
	for range 3 {
		got[string(c.read())] = true
	}
	for _, want := range []string{
		notification(zk.EventNodeDataChanged, "/changed"),
		notification(zk.EventNodeDeleted, "/missing"),
		string(cat(be32(-8), be64(env.srv.Zxid()), be32(0))), // the one reply
	} {
		if !got[want] {
			t.Errorf("no notification %x among the replies", want)
		}
	}
	// The watches that did not fire are set: the next changes fire them.
	if _, err := writer.Set("/old", []byte("y"), -1); err != nil {
		t.Fatal(err)
	}
	if r := string(c.read()); r != notification(zk.EventNodeDataChanged, "/old") {
		t.Fatalf("after Set(/old): %x", r)
	}
	if _, err := writer.Create("/new", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	if r := string(c.read()); r != notification(zk.EventNodeCreated, "/new") {
		t.Fatalf("after Create(/new): %x", r)
	}
}

// TestServe serves on a listener the caller made and returns once it is
// closed.
func TestServe(t *testing.T) {
	srv := zkfake.NewServer(zkfake.WithTickTime(testTick))
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- wire.Serve(srv, ln) }()
	c, _, err := zk.Connect([]string{ln.Addr().String()}, 4*time.Second, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/s", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	ln.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Serve returned %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after its listener closed")
	}
	c.Close()
	// Serve closed the sessions it opened: the ephemeral is gone.
	if n := len(srv.Sessions()); n != 0 {
		t.Fatalf("%d sessions left after Serve returned", n)
	}
}
