package ensemble_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/ensemble"
	"github.com/zksim/zksim/zkfake/zktest"
)

var openACL = zk.WorldACL(zk.PermAll)

func TestBaseIsFreshAndRemoved(t *testing.T) {
	servers := ensemble.Servers(t)
	target := ensemble.NewTarget(servers)
	var base string
	target.Run(t, "scenario", func(t *testing.T, env zktest.Env) {
		if !env.Real() {
			t.Fatal("Real() = false on a real ensemble")
		}
		base = env.Base()
		c, _ := env.Connect(t, 4*time.Second)
		children, _, err := c.Children(base)
		if err != nil || len(children) != 0 {
			t.Fatalf("Children(base %s) = %v, %v; want an existing, empty node", base, children, err)
		}
		if _, err := c.Create(base+"/p", nil, 0, openACL); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Create(base+"/p/q", nil, 0, openACL); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Create(base+"/e", nil, zk.FlagEphemeral, openACL); err != nil {
			t.Fatal(err)
		}
	})
	check := connect(t, servers)
	if ok, _, err := check.Exists(base); err != nil || ok {
		t.Fatalf("after the scenario, Exists(%s) = %v, %v; want the base removed", base, ok, err)
	}
}

func TestConnectToPinsMember(t *testing.T) {
	servers := ensemble.Servers(t)
	ensemble.NewTarget(servers).Run(t, "pinned", func(t *testing.T, env zktest.Env) {
		e := env.(*ensemble.Env)
		if e.Members() != len(servers) {
			t.Fatalf("Members() = %d; want %d", e.Members(), len(servers))
		}
		for member, server := range e.Servers() {
			c, _ := e.ConnectTo(t, member, 4*time.Second)
			if got := c.Server(); got != server {
				t.Errorf("ConnectTo(%d).Server() = %q; want %q", member, got, server)
			}
			// Every member sees the base at once: Connect synced with it.
			if ok, _, err := c.Exists(env.Base()); err != nil || !ok {
				t.Errorf("member %d: Exists(base) = %v, %v", member, ok, err)
			}
		}
	})
}

// connect opens a plain go-zookeeper session for checks made outside any
// scenario.
func connect(t *testing.T, servers []string) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect(servers, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	timeout := time.After(15 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return c
			}
		case <-timeout:
			t.Fatal(errors.New("no session within 15s"))
		}
	}
}
