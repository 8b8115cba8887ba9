package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// kazooScript is a kazoo test of its own against the served fake: the
// server's version (kazoo asks envi), a transaction, an ephemeral node,
// and the session expired through the admin interface, which kazoo sees as
// LOST, then a new session that no longer has the node.
const kazooScript = `
import os, threading, urllib.request
from kazoo.client import KazooClient, KazooState
zk = KazooClient(hosts=os.environ["ZK"], timeout=4)
lost = threading.Event()
zk.add_listener(lambda s: lost.set() if s == KazooState.LOST else None)
zk.start(timeout=10)
assert zk.server_version()[:2] == (3, 8), zk.server_version()
t = zk.transaction()
t.create("/kz", b"x")
t.create("/kz/child", b"y")
assert t.commit() == ["/kz", "/kz/child"]
zk.create("/kz/e", b"", ephemeral=True)
sid = "0x%x" % zk.client_id[0]
urllib.request.urlopen(urllib.request.Request(os.environ["ADMIN"] + "/sessions/" + sid + "/expire", method="POST")).read()
assert lost.wait(10), "kazoo never saw its session LOST"
zk.stop()
zk.start(timeout=10)
assert zk.exists("/kz/e") is None
assert zk.get("/kz/child")[0] == b"y"
zk.stop()
print("ok")
`

// kazooPython returns a Python with kazoo (Debian's python3-kazoo), or ""
// when none is installed.
func kazooPython() string {
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(py, "-c", "import kazoo").Run() == nil {
			return py
		}
	}
	return ""
}

// TestKazooAgainstTheServedFake runs kazooScript where kazoo is installed
// (CI installs python3-kazoo).
func TestKazooAgainstTheServedFake(t *testing.T) {
	py := kazooPython()
	if py == "" {
		t.Skip("no Python with kazoo (apt-get install python3-kazoo)")
	}
	addr, admin := start(t, options{admin: "127.0.0.1:0"})
	cmd := exec.Command(py, "-c", kazooScript)
	cmd.Env = append(os.Environ(), "ZK="+addr, "ADMIN="+admin)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "ok") {
		t.Fatalf("kazoo: %v\n%s", err, out)
	}
}

// TestKazooFaultSuite runs testdata/kazoo/test_faults.py, the README's
// example of a kazoo suite that drives the fake's faults through the admin
// interface, against a served fake, where kazoo is installed.
func TestKazooFaultSuite(t *testing.T) {
	py := kazooPython()
	if py == "" {
		t.Skip("no Python with kazoo (apt-get install python3-kazoo)")
	}
	addr, admin := start(t, options{admin: "127.0.0.1:0"})
	cmd := exec.Command(py, "-m", "unittest", "-v", "testdata/kazoo/test_faults.py")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "ZK="+addr, "ADMIN="+admin)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\nOK") {
		t.Fatalf("kazoo's fault suite: %v\n%s", err, out)
	}
}
