// Package ensemble is the real-ensemble side of the zktest conformance
// suite: a zktest.Target whose scenarios run against real ZooKeeper servers
// named in ZK_SERVERS, through go-zookeeper, so that every expectation the
// fake is held to can be checked against ZooKeeper itself.
//
// Tests call Servers first; it skips the test when ZK_SERVERS is unset, so a
// plain `go test ./...` runs the fake mode only. `make test-ensemble` starts
// a 3-node ensemble on 127.0.0.1 (.ci/ensemble) and runs the tests with
// ZK_SERVERS pointing at it.
//
// Faults are injected by a loopback TCP proxy that this package puts between
// each client and the servers: Partition cuts a client off, Heal lets it back,
// and Expire holds the client off until the ensemble has expired its session.
//
// # The ensemble
//
// `make test-ensemble` uses an ensemble that already serves, or starts one
// (client ports 22181-22183; Debian's zookeeper package, installed if
// missing, which needs root) and stops it again afterwards, pass or fail.
// It runs `go test -count=1 -p 1 ./...`: some scenarios check that each
// write takes exactly the next zxid, which holds only while nothing else
// writes, so keep the ensemble to yourself while testing. It runs without
// -race: go-zookeeper v1.0.4 has a data race of its own on reconnect
// (sendSetWatches reads lastZxid while the new connection's recvLoop
// writes it; go-zookeeper/zk#35), which real reconnects with watches set
// trigger about every other run; `make test` runs the project's own code
// with -race.
//
// By hand, .ci/ensemble has up (prints the connect string), down, status,
// leader, stop-member N, start-member N and settings:
//
//	ZK_SERVERS=$(.ci/ensemble up) go test ./recipe/
//
// Its tick is 200ms, so negotiated session timeouts are clamped to
// 400ms..4s. Its members skip fsync and compile with C1 only, which suits
// tests on a small shared machine; ZKSIM_ENSEMBLE_DURABLE=1 .ci/ensemble up
// starts them with ZooKeeper's and Java's defaults instead (fsync on every
// transaction, C2), as a production ensemble runs.
// ZKSIM_ENSEMBLE_CLIENT_PORT and ZKSIM_ENSEMBLE_DIR run a second ensemble
// beside the first. The servers' configuration, which their
// /zookeeper/config shows, is read from the zoo.cfg .ci/ensemble wrote
// (ZooCfg; ZK_ZOOCFG names another ensemble's).
//
// # Scenarios on both sides
//
// Scenarios written against zktest.Env, as zktest.Scenarios, run on both:
// zktest.RunScenarios(t, fake.NewTarget(), mine), and the same with
// NewTarget(Servers(t)) in its place. On the ensemble each scenario gets a
// fresh base znode, removed afterwards, and its sessions share a home
// member, so one sees another's writes as on the fake; Env.ConnectTo(t,
// member, timeout) puts a session on a chosen member. The proxy stands in
// front of each session: Partition closes the client's connection and
// refuses its reconnects until Heal; Expire holds the client off until
// every member has applied the session's expiry, then lets it through, and
// the client sees StateExpired and then a new session on the same
// *zk.Conn.
//
// What runs in this mode: the conformance suite (this package's
// TestConformance), the recipes' scenarios (package recipe), the
// differential test (zkfake/difftest: seeded op sequences run on both
// sides and compared, and `make record` to re-record the corpus that every
// `make test` replays on the fake), linearizability checks of histories
// recorded on the ensemble (linearizability, linearizability/fakelog), and
// the benchmarks' sanity checks. CI runs .ci/run: it installs ZooKeeper if
// it is missing, runs `make test`, `make test-long` and `make
// test-ensemble`, and stops what it started.
package ensemble

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// ServersEnv is the environment variable naming the ensemble to test
// against: comma-separated host:port client addresses, loopback only, e.g.
// "127.0.0.1:22181,127.0.0.1:22182,127.0.0.1:22183".
const ServersEnv = "ZK_SERVERS"

// reachWait bounds how long Servers waits for every server to answer ruok;
// an ensemble that has just been started may need a moment.
const reachWait = 15 * time.Second

// reachability caches, per ZK_SERVERS value, whether the servers answered,
// so that only the first test of a process pays for the check and a test
// that stops a member on purpose does not fail the tests after it.
var reachability struct {
	sync.Mutex
	checked map[string]error
}

// ServersFromEnv returns the servers ZK_SERVERS names, parsed, or nil if it
// is not set: for commands, which take the ensemble from the environment
// and hand it on; tests call Servers.
func ServersFromEnv() ([]string, error) {
	spec := os.Getenv(ServersEnv)
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	servers, err := ParseServers(spec)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: %v", ServersEnv, spec, err)
	}
	return servers, nil
}

// Servers returns the client addresses in ZK_SERVERS for a test that needs a
// real ensemble. When ZK_SERVERS is unset the test is skipped: the
// real-ensemble mode is opt-in. When it is set but malformed, names a
// non-loopback address, or a server does not answer the four-letter word
// ruok with imok within 15 seconds, the test fails rather than skips, so a
// broken ensemble cannot pass as a green run.
func Servers(t testing.TB) []string {
	t.Helper()
	servers, err := ServersFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if servers == nil {
		t.Skip("ZK_SERVERS is not set, so the real-ensemble mode is off; run it with `make test-ensemble`, " +
			"or start an ensemble with `.ci/ensemble up` and set ZK_SERVERS to the connect string it prints")
	}
	spec := strings.Join(servers, ",")
	reachability.Lock()
	defer reachability.Unlock()
	if reachability.checked == nil {
		reachability.checked = map[string]error{}
	}
	err, done := reachability.checked[spec]
	if !done {
		err = waitAllOK(servers, reachWait)
		reachability.checked[spec] = err
	}
	if err != nil {
		t.Fatalf("%s=%q is set but the ensemble is not usable: %v", ServersEnv, spec, err)
	}
	return servers
}

// ParseServers parses a ZK_SERVERS value: comma-separated host:port
// addresses whose host is a loopback IP literal (127.0.0.0/8 or ::1). Tests
// only ever talk to the local machine, so any other host, including a name
// such as "localhost" whose resolution is not ours to control, is an error.
// Surrounding spaces and empty entries are ignored; at least one address is
// required, and go-zookeeper's chroot suffix ("/path") is not accepted.
func ParseServers(spec string) ([]string, error) {
	var servers []string
	for _, field := range strings.Split(spec, ",") {
		addr := strings.TrimSpace(field)
		if addr == "" {
			continue
		}
		if err := checkLoopback(addr); err != nil {
			return nil, err
		}
		servers = append(servers, addr)
	}
	if len(servers) == 0 {
		return nil, errors.New("no server addresses")
	}
	return servers, nil
}

func checkLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("server %q: want host:port: %v", addr, err)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("server %q: port %q is not a number from 1 to 65535", addr, port)
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("server %q: only loopback IP addresses (such as 127.0.0.1) are allowed", addr)
	}
	return nil
}

// waitAllOK waits until every server answers ruok with imok, or fails
// naming the servers that did not by the deadline.
func waitAllOK(servers []string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	pending := append([]string(nil), servers...)
	lastErr := map[string]error{}
	for {
		var still []string
		for _, s := range pending {
			if err := ruok(s); err != nil {
				lastErr[s] = err
				still = append(still, s)
			}
		}
		if len(still) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var msgs []string
			for _, s := range still {
				msgs = append(msgs, fmt.Sprintf("%s: %v", s, lastErr[s]))
			}
			return fmt.Errorf("no ruok→imok within %v from %s", wait, strings.Join(msgs, "; "))
		}
		pending = still
		time.Sleep(200 * time.Millisecond)
	}
}

func ruok(server string) error {
	reply, err := fourLetterWord(server, "ruok")
	if err != nil {
		return err
	}
	if reply != "imok" {
		return fmt.Errorf("ruok answered %q, want \"imok\"", reply)
	}
	return nil
}

// fourLetterWord sends one of ZooKeeper's four-letter commands and returns
// the whole reply; the server closes the connection after answering.
func fourLetterWord(server, word string) (string, error) {
	const wait = 2 * time.Second
	conn, err := net.DialTimeout("tcp", server, wait)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(wait)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(conn, word); err != nil {
		return "", err
	}
	reply, err := io.ReadAll(conn)
	if err != nil {
		return "", err
	}
	return string(reply), nil
}

// tickTime asks a server for its tickTime through the four-letter word conf.
func tickTime(server string) (time.Duration, error) {
	reply, err := fourLetterWord(server, "conf")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(strings.NewReader(reply))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "tickTime="); ok {
			ms, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || ms <= 0 {
				return 0, fmt.Errorf("conf from %s: bad tickTime %q", server, v)
			}
			return time.Duration(ms) * time.Millisecond, nil
		}
	}
	return 0, fmt.Errorf("conf from %s has no tickTime (is the conf four-letter word whitelisted?)", server)
}
