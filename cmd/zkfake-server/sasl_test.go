package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// jaasFile is the JAAS file the ensemble's members run with: kazoo's SASL
// users.
const jaasFile = "../../testdata/sasl/jaas.conf"

// TestKazooSASLAgainstTheServedFake runs kazoo's own DIGEST-MD5 tests,
// test_sasl.py's TestLegacySASLDigestAuthentication and
// TestSASLDigestAuthentication (a login, a node with a sasl ACL that a
// session without it cannot read, and a bad user and password refused
// with AuthFailed), against the command started with -jaas, where kazoo,
// pytest and pure-sasl are installed (CI installs them).
func TestKazooSASLAgainstTheServedFake(t *testing.T) {
	py := kazooPython()
	if py == "" {
		t.Skip("no Python with kazoo (apt-get install python3-kazoo)")
	}
	if exec.Command(py, "-c", "import puresasl, pytest").Run() != nil {
		t.Skip("kazoo's SASL tests need pure-sasl and pytest (apt-get install python3-pure-sasl python3-pytest)")
	}
	addr, _ := start(t, options{jaas: jaasFile})
	cmd := exec.Command(py, "testdata/kazoo/run_suite.py", "test_sasl.py", "-k", "Digest")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "ZK_SERVERS="+addr)
	out, err := cmd.CombinedOutput()
	summary := regexp.MustCompile(`(?m)^=* ?(\d+) passed, (\d+) deselected`).FindSubmatch(out)
	if err != nil || summary == nil || string(summary[1]) != "4" {
		t.Fatalf("kazoo's test_sasl.py -k Digest: %v, want its 4 tests passed\n%s", err, out)
	}
}

// A -jaas file the fake cannot serve stops the command before it serves.
func TestRefusesJAASFilesItCannotServe(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for what, path := range map[string]string{
		"a missing file":         filepath.Join(dir, "missing.conf"),
		"a file Java refuses":    write("broken.conf", "Server { org.apache.zookeeper.server.auth.DigestLoginModule required user_a=\"b\" }"),
		"no Server section":      write("client.conf", "Client { org.apache.zookeeper.server.auth.DigestLoginModule required; };"),
		"a Kerberos Server only": write("krb.conf", "Server { com.sun.security.auth.module.Krb5LoginModule required; };"),
	} {
		// Should it serve after all, the stop already sent ends it.
		stop := make(chan os.Signal, 1)
		stop <- os.Interrupt
		o := options{addr: "127.0.0.1:0", tick: time.Second, maxConns: 60, members: 1, jaas: path}
		if err := run(o, os.Stdout, stop); err == nil {
			t.Errorf("-jaas with %s: served; want a refusal", what)
		}
	}
}
