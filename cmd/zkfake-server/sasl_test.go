package main

import (
	"bytes"
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
//
// kazoo's test_invalid_sasl_auth races with itself: start() returns once
// the session is made, and if the AUTH_FAILED that follows the bad login
// has already closed the client, start() raises KazooTimeoutError, not the
// AuthFailedError the test expects (a kazoo maintainer saw it on
// python-zk/kazoo#547; it fails so about one run in ten against a 3.8.0
// ensemble too), in the legacy class and the other alike, now and then in
// both in one run. A run that fails only so, with the AUTH_FAILED told,
// is run again, up to kazooRaceRuns runs in all; one of them must pass.
func TestKazooSASLAgainstTheServedFake(t *testing.T) {
	py := kazooPython()
	if py == "" {
		t.Skip("no Python with kazoo (apt-get install python3-kazoo)")
	}
	if exec.Command(py, "-c", "import puresasl, pytest").Run() != nil {
		t.Skip("kazoo's SASL tests need pure-sasl and pytest (apt-get install python3-pure-sasl python3-pytest)")
	}
	addr, _ := start(t, options{jaas: jaasFile})
	var out []byte
	for try := 1; ; try++ {
		cmd := exec.Command(py, "testdata/kazoo/run_suite.py", "test_sasl.py", "-k", "Digest")
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), "ZK_SERVERS="+addr)
		var err error
		out, err = cmd.CombinedOutput()
		summary := regexp.MustCompile(`(?m)^=* ?(\d+) passed, (\d+) deselected`).FindSubmatch(out)
		if err == nil && summary != nil && string(summary[1]) == "4" {
			return
		}
		if try == kazooRaceRuns || !kazooStartRace(out) {
			t.Fatalf("kazoo's test_sasl.py -k Digest (run %d): %v, want its 4 tests passed\n%s", try, err, out)
		}
		t.Logf("run %d: kazoo's test_invalid_sasl_auth lost its own race (KazooTimeoutError after AUTH_FAILED); running again", try)
	}
}

// kazooRaceRuns is how many runs of kazoo's suite the test tries while
// every failure is kazoo's own race. Idle, the race is rare (none in 12
// runs); beside a fuzz campaign on both cores it came in 3 of 11 runs, and
// CI's long tier, which runs the packages in parallel, once lost it three
// runs in a row. Six runs in a row at that rate are about one in a
// thousand.
const kazooRaceRuns = 6

// kazooStartRace reports whether a run of kazoo's DIGEST-MD5 tests failed
// only as test_invalid_sasl_auth's start() can after a refused login: the
// tests that failed are that one of the legacy class, of the other, or of
// both (each races on its own), with KazooTimeoutError, the AUTH_FAILED
// logged.
func kazooStartRace(out []byte) bool {
	failed := regexp.MustCompile(`(?m)^\s*FAILED (\S+)`).FindAllSubmatch(out, -1)
	if len(failed) == 0 || len(failed) > 2 || len(failed) == 2 && bytes.Equal(failed[0][1], failed[1][1]) {
		return false
	}
	for _, f := range failed {
		if !bytes.HasSuffix(f[1], []byte("::test_invalid_sasl_auth")) {
			return false
		}
	}
	// pytest's summary line may leave the error out; each failure's
	// traceback names it.
	return bytes.Count(out, []byte("KazooTimeoutError: Connection time-out")) >= len(failed) &&
		bytes.Contains(out, []byte("AUTH_FAILED closing"))
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
