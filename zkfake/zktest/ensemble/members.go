package ensemble

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/zksim/zksim/zkfake/zktest"
)

// The members of an ensemble that .ci/ensemble started can be stopped and
// started through that script, for the scenarios that stop a follower and
// then the leader (zktest.Members). On any other ensemble those scenarios
// skip.

// ensembleScript finds .ci/ensemble in the module this test runs in.
func ensembleScript() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			script := filepath.Join(dir, ".ci", "ensemble")
			_, err := os.Stat(script)
			return script, err == nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// script runs .ci/ensemble with args and returns its output.
func script(args ...string) (string, error) {
	path, ok := ensembleScript()
	if !ok {
		return "", fmt.Errorf("no .ci/ensemble above %s", mustWd())
	}
	out, err := exec.Command("bash", append([]string{path}, args...)...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return "", fmt.Errorf(".ci/ensemble %s: %v: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

func mustWd() string {
	wd, _ := os.Getwd()
	return wd
}

// scriptManages reports whether .ci/ensemble runs exactly the servers the
// Env uses, in the same order, so that its member numbers are ours plus 1.
func (e *Env) scriptManages() bool {
	e.target.scriptOnce.Do(func() {
		out, err := script("servers")
		e.target.scripted = err == nil && slices.Equal(strings.Split(out, ","), e.target.servers)
	})
	return e.target.scripted
}

// errNoScript is why members cannot be stopped or named: it wraps
// errors.ErrUnsupported, so zktest.Require skips the scenario.
var errNoScript = fmt.Errorf("the ensemble was not started by .ci/ensemble, so its members cannot be stopped: %w", errors.ErrUnsupported)

// memberScript runs .ci/ensemble with a command and a member, numbered as
// in ConnectTo, once it knows the script runs this Env's ensemble.
func (e *Env) memberScript(command string, member ...int) (string, error) {
	if !e.scriptManages() {
		return "", errNoScript
	}
	args := []string{command}
	for _, m := range member {
		args = append(args, strconv.Itoa(m+1))
	}
	return script(args...)
}

// Leader returns the member that leads now, numbered as in ConnectTo.
func (e *Env) Leader() (int, error) {
	out, err := e.memberScript("leader")
	if err != nil {
		return -1, err
	}
	n, err := strconv.Atoi(out)
	if err != nil || n < 1 || n > len(e.target.servers) {
		return -1, fmt.Errorf(".ci/ensemble leader printed %q", out)
	}
	return n - 1, nil
}

// StopMember stops a member's server process, as a crash would. The Env
// starts it again when its test ends if the scenario did not.
func (e *Env) StopMember(member int) error {
	if _, err := e.memberScript("stop-member", member); err != nil {
		return err
	}
	e.mu.Lock()
	e.stopped = append(e.stopped, member)
	e.mu.Unlock()
	return nil
}

// StartMember starts a stopped member and returns once it serves in the
// quorum again.
func (e *Env) StartMember(member int) error {
	_, err := e.memberScript("start-member", member)
	return err
}

// startStopped starts the members the scenario stopped, at its end.
func (e *Env) startStopped() {
	e.mu.Lock()
	stopped := e.stopped
	e.stopped = nil
	e.mu.Unlock()
	for _, m := range stopped {
		e.memberScript("start-member", m)
	}
}

// ReconnectTo makes conn's next reconnect, whatever causes it, go to member
// (numbered as in ConnectTo), and later ones too while it answers: the
// member becomes the first go-zookeeper's host provider offers. It does
// not drop the connection. It first syncs the member with the leader, so
// that the member has applied every zxid conn can have seen; otherwise a
// follower a little behind would refuse the client (ZooKeeper refuses a
// client whose last-seen zxid is past its own) and the move would be a
// race. A session opened with ConnectTo cannot move.
func (e *Env) ReconnectTo(conn zktest.Conn, member int) error {
	if member < 0 || member >= len(e.target.servers) {
		return fmt.Errorf("ReconnectTo: member %d out of range [0, %d)", member, len(e.target.servers))
	}
	server := e.target.servers[member]
	e.mu.Lock()
	hosts, ok := e.hosts[conn]
	e.mu.Unlock()
	if !ok {
		return notOurs(conn)
	}
	if !hosts.moveHome(server) {
		return fmt.Errorf("ReconnectTo: the session was opened with ConnectTo to another member than %s", server)
	}
	if err := syncServer(server, e.base); err != nil {
		return fmt.Errorf("ReconnectTo: syncing member %d: %v", member, err)
	}
	return nil
}

// MemberOf returns the member (numbered as in ConnectTo) conn is connected
// to, or was last.
func (e *Env) MemberOf(conn zktest.Conn) (int, error) {
	i := slices.Index(e.target.servers, conn.Server())
	if i < 0 {
		return -1, fmt.Errorf("MemberOf: the session is on %q, not a member of %v", conn.Server(), e.target.servers)
	}
	return i, nil
}
