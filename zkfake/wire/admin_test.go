package wire_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/wire"
)

// admin serves a fake made with opts to go-zookeeper's client over pipes
// (in the test's synctest bubble, so in virtual time), and returns a
// connected client and the admin interface.
func admin(t *testing.T, opts ...zkfake.Option) (*zk.Conn, <-chan zk.Event, http.Handler) {
	t.Helper()
	srv := zkfake.NewServer(append([]zkfake.Option{zkfake.WithTickTime(testTick)}, opts...)...)
	pipe := wire.ServePipe(srv)
	t.Cleanup(func() {
		pipe.Close()
		srv.Close()
	})
	c, events, err := pipe.Connect(4 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	awaitState(t, events, zk.StateHasSession)
	return c, events, pipe.Admin()
}

// call sends method path (with body) to the admin interface and decodes
// its JSON answer into out, failing t unless the status is want.
func call(t *testing.T, h http.Handler, method, path, body string, want int, out any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	if rec.Code != want {
		t.Fatalf("%s %s: status %d (%s), want %d", method, path, rec.Code, rec.Body, want)
	}
	if out != nil {
		if err := json.NewDecoder(rec.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

// awaitState waits for the session event state on events.
func awaitState(t *testing.T, events <-chan zk.Event, state zk.State) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Type == zk.EventSession && ev.State == state {
				return
			}
		case <-deadline:
			t.Fatalf("no %v within 10s (virtual)", state)
		}
	}
}

// TestAdminSessionFaults drives a real client's session through the admin
// interface: listed with its ephemeral, its connection dropped and
// partitioned (it comes back with its session), a reply lost after the
// write, and the session expired.
func TestAdminSessionFaults(t *testing.T) { synctest.Test(t, testAdminSessionFaults) }

func testAdminSessionFaults(t *testing.T) {
	c, events, h := admin(t)
	if _, err := c.Create("/e", []byte("1"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("%#x", c.SessionID())
	var sessions []struct {
		ID          string   `json:"id"`
		Ephemerals  []string `json:"ephemerals"`
		Connected   bool     `json:"connected"`
		Partitioned bool     `json:"partitioned"`
	}
	call(t, h, "GET", "/sessions", "", http.StatusOK, &sessions)
	if len(sessions) != 1 || sessions[0].ID != id || !sessions[0].Connected || len(sessions[0].Ephemerals) != 1 || sessions[0].Ephemerals[0] != "/e" {
		t.Fatalf("sessions = %+v, want %s connected with /e", sessions, id)
	}

	call(t, h, "POST", "/sessions/"+id+"/drop", "", http.StatusOK, nil)
	awaitState(t, events, zk.StateDisconnected)
	awaitState(t, events, zk.StateHasSession)

	call(t, h, "POST", "/sessions/"+id+"/partition", "", http.StatusOK, nil)
	awaitState(t, events, zk.StateDisconnected)
	call(t, h, "GET", "/sessions", "", http.StatusOK, &sessions)
	if !sessions[0].Partitioned || sessions[0].Connected {
		t.Fatalf("sessions = %+v, want partitioned and not connected", sessions)
	}
	call(t, h, "POST", "/sessions/"+id+"/heal", "", http.StatusOK, nil)
	awaitState(t, events, zk.StateHasSession)
	if got := fmt.Sprintf("%#x", c.SessionID()); got != id {
		t.Fatalf("session %s after the heal, want %s", got, id)
	}

	call(t, h, "POST", "/lose-reply", `{"op": "create", "session": "`+id+`", "nth": 1, "applied": true}`, http.StatusOK, nil)
	if _, err := c.Create("/ghost", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("create with its reply lost: %v, want %v", err, zk.ErrConnectionClosed)
	}
	var tree []struct {
		Path string `json:"path"`
	}
	call(t, h, "GET", "/tree", "", http.StatusOK, &tree)
	if !strings.Contains(fmt.Sprint(tree), "/ghost") {
		t.Fatalf("tree %v lacks /ghost, the write whose reply was lost", tree)
	}

	call(t, h, "POST", "/sessions/"+id+"/expire", "", http.StatusOK, nil)
	awaitState(t, events, zk.StateExpired)
	call(t, h, "POST", "/sessions/"+id+"/expire", "", http.StatusNotFound, nil)
	call(t, h, "POST", "/sessions/zzz/drop", "", http.StatusBadRequest, nil)
}

// TestAdminServerControls: members, a manual clock, the log and a reset.
func TestAdminServerControls(t *testing.T) { synctest.Test(t, testAdminServerControls) }

func testAdminServerControls(t *testing.T) {
	c, events, h := admin(t, zkfake.WithEnsemble(3), zkfake.WithManualClock(time.Unix(1000, 0)))
	if _, err := c.Create("/a", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	var member struct {
		Up bool `json:"up"`
	}
	call(t, h, "POST", "/members/1/stop", "", http.StatusOK, &member)
	if member.Up {
		t.Fatal("member 1 is up after stop")
	}
	call(t, h, "POST", "/members/1/start", "", http.StatusOK, &member)
	if !member.Up {
		t.Fatal("member 1 is down after start")
	}
	call(t, h, "POST", "/members/3/stop", "", http.StatusBadRequest, nil)
	call(t, h, "POST", "/clock/advance?by=5s", "", http.StatusOK, nil)
	call(t, h, "POST", "/clock/advance?by=soon", "", http.StatusBadRequest, nil)
	var log []struct {
		Op   string `json:"op"`
		Path string `json:"path"`
	}
	call(t, h, "GET", "/log", "", http.StatusOK, &log)
	if !strings.Contains(fmt.Sprint(log), "create /a") {
		t.Fatalf("log %v lacks the create of /a", log)
	}

	call(t, h, "POST", "/reset", "", http.StatusOK, nil)
	awaitState(t, events, zk.StateExpired)
	var tree []struct {
		Path string `json:"path"`
	}
	call(t, h, "GET", "/tree", "", http.StatusOK, &tree)
	for _, n := range tree {
		if n.Path != "/" && !strings.HasPrefix(n.Path, "/zookeeper") {
			t.Fatalf("after the reset the tree holds %s", n.Path)
		}
	}
}

// Without a manual clock there is no clock to move.
func TestAdminClockNeedsManualClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, _, h := admin(t)
		call(t, h, "POST", "/clock/advance?by=1s", "", http.StatusBadRequest, nil)
	})
}

// TestPipeDropIsAConnectionLoss: a call that meets a connection the server
// just dropped fails as over TCP, with a connection loss, never with the
// pipe's own error.
func TestPipeDropIsAConnectionLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := zkfake.NewServer(zkfake.WithTickTime(testTick))
		defer srv.Close()
		pipe := wire.ServePipe(srv)
		defer pipe.Close()
		c, events, err := pipe.Connect(4 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		awaitState(t, events, zk.StateHasSession)
		for range 20 {
			if err := pipe.Drop(c.SessionID()); err != nil {
				t.Fatal(err)
			}
			_, _, err := c.Get("/")
			if err != nil && !errors.Is(err, zk.ErrConnectionClosed) && !errors.Is(err, zk.ErrNoServer) {
				t.Fatalf("Get after a drop: %v, want nil or a connection loss", err)
			}
			awaitState(t, events, zk.StateHasSession)
		}
	})
}

// TestAdminLoseReplyDefaults: a rule with no nth loses the next matching
// reply only, after the write was applied; reset removes what is left of
// a rule and a tree whatever its ACLs.
func TestAdminLoseReplyDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, events, h := admin(t)
		call(t, h, "POST", "/lose-reply", `{"op": "create"}`, http.StatusOK, nil)
		if _, err := c.Create("/ghost", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrConnectionClosed) {
			t.Fatalf("first create: %v, want %v", err, zk.ErrConnectionClosed)
		}
		awaitState(t, events, zk.StateHasSession)
		if ok, _, err := c.Exists("/ghost"); err != nil || !ok {
			t.Fatalf("Exists(/ghost) = %v, %v: the lost reply's write should be applied", ok, err)
		}
		if _, err := c.Create("/next", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("second create: %v, want its reply (nth defaults to 1)", err)
		}
		if err := c.AddAuth("digest", []byte("alice:secret")); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Create("/next/mine", nil, 0, zk.AuthACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		call(t, h, "POST", "/lose-reply", `{"op": "delete", "nth": 0}`, http.StatusOK, nil)
		call(t, h, "POST", "/reset", "", http.StatusOK, nil)
		awaitState(t, events, zk.StateExpired)
		var tree []struct {
			Path string `json:"path"`
		}
		call(t, h, "GET", "/tree", "", http.StatusOK, &tree)
		if strings.Contains(fmt.Sprint(tree), "/next") {
			t.Fatalf("tree after reset %v", tree)
		}
		if _, err := c.Create("/x", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete("/x", -1); err != nil {
			t.Fatalf("delete after reset: %v, want no loss rule left", err)
		}
	})
}
