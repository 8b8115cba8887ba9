package recipe_test

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// kazooElectionScript runs a kazoo Election on $ELECTION with the
// identifier "kazoo". It prints the contenders kazoo sees before it
// campaigns, "leading" once elected, and resigns when a line arrives on
// its standard input.
const kazooElectionScript = `
import os, sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=os.environ["ZK"], timeout=4)
zk.start(timeout=10)
election = zk.Election(os.environ["ELECTION"], "kazoo")
print("contenders " + ",".join(election.contenders()), flush=True)
def lead():
    print("leading", flush=True)
    sys.stdin.readline()
election.run(lead)
print("resigned", flush=True)
zk.stop()
zk.close()
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

// A kazoo Election and an Election on the same path exclude each other:
// kazoo's is a kazoo Lock, whose "__lock__" nodes are candidates for the
// Election, and the Election's default node name is one kazoo counts.
// kazoo talks to the servers itself, so this runs on targets that name
// theirs (the real ensemble).
func testInteropKazooElection(t *testing.T, env zktest.Env) {
	named, ok := env.(interface{ Servers() []string })
	if !ok {
		t.Skip("target has no server addresses for kazoo to connect to")
	}
	py := kazooPython()
	if py == "" {
		t.Skip("no Python with kazoo (apt-get install python3-kazoo)")
	}
	dir := env.Base() + "/election"
	connA, _ := env.Connect(t, sessionTimeout)
	connB, _ := env.Connect(t, sessionTimeout)
	a := recipe.NewElection(connA, dir, []byte("go-a"))
	b := recipe.NewElection(connB, dir, []byte("go-b"))
	if err := a.Campaign(testCtx(t)); err != nil {
		t.Fatal(err)
	}

	cmd := exec.CommandContext(testCtx(t), py, "-c", kazooElectionScript)
	cmd.Env = append(os.Environ(), "ZK="+strings.Join(named.Servers(), ","), "ELECTION="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed once cmd.Wait has set waitErr
	var waitErr error
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
		}
	})
	says := func(want string) {
		t.Helper()
		select {
		case line, ok := <-lines:
			if !ok || line != want {
				t.Fatalf("kazoo said %q (open %v), want %q; stderr:\n%s", line, ok, want, stderr.String())
			}
		case <-time.After(time.Minute):
			t.Fatalf("kazoo did not say %q; stderr:\n%s", want, stderr.String())
		}
	}
	quiet := func(what string) {
		t.Helper()
		select {
		case line := <-lines:
			t.Fatalf("%s: kazoo said %q", what, line)
		case <-time.After(300 * time.Millisecond):
		}
	}

	says("contenders go-a") // kazoo lists the Election as a contender
	settles(t, connA, dir, 2)
	quiet("while the Election leads")
	if l := currentLeader(t, connA, dir); string(l.Value) != "go-a" {
		t.Fatalf("leader %q while the Election leads", l.Value)
	}
	if err := a.Resign(); err != nil {
		t.Fatal(err)
	}
	says("leading")
	if l := currentLeader(t, connA, dir); string(l.Value) != "kazoo" || l.Session == 0 || l.Token <= 0 {
		t.Fatalf("leader %+v (value %q) while kazoo leads", l, l.Value)
	}

	bDone := campaignAsync(testCtx(t), b)
	settles(t, connA, dir, 2)
	stillBlocked(t, "the Election's Campaign while kazoo leads", bDone)
	if _, err := stdin.Write([]byte("resign\n")); err != nil {
		t.Fatal(err)
	}
	says("resigned")
	if err := mustWait(t, "the Election's Campaign after kazoo resigned", bDone); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("kazoo: %v; stderr:\n%s", waitErr, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("kazoo did not exit")
	}
	if err := b.Resign(); err != nil {
		t.Fatal(err)
	}
}
