package zkfake_test

import (
	"fmt"
	"math"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake"
)

// register is production code: it takes the recipe.Conn interface, which
// both *zk.Conn and *zkfake.Conn satisfy.
func register(conn recipe.Conn, name string) (string, error) {
	return conn.Create("/workers/"+name+"-", []byte(name), zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
}

// A test hands production code a *zkfake.Conn where production hands it the
// *zk.Conn from zk.Connect.
func Example() {
	srv := zkfake.NewServer()
	defer srv.Close()
	conn, _, err := srv.Connect(10 * time.Second)
	if err != nil {
		panic(err)
	}
	defer conn.Close()

	conn.Create("/workers", nil, zk.FlagPersistent, zk.WorldACL(zk.PermAll))
	path, err := register(conn, "alice")
	fmt.Println(path, err)
	_, stat, _ := conn.Get(path)
	fmt.Println("owned by this session:", stat.EphemeralOwner == conn.SessionID())
	// Output:
	// /workers/alice-0000000000 <nil>
	// owned by this session: true
}

// Expire ends a session as the server does when it stops hearing from the
// client: its ephemeral nodes go, the client sees StateExpired and carries
// on with a new session.
func ExampleServer_Expire() {
	srv := zkfake.NewServer()
	defer srv.Close()
	conn, _, _ := srv.Connect(10 * time.Second)
	defer conn.Close()
	conn.Create("/leader", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	old := conn.SessionID()

	srv.Expire(old)
	ok, _, _ := conn.Exists("/leader")
	fmt.Println("leader node still there:", ok)
	fmt.Println("new session:", conn.SessionID() != old)
	// Output:
	// leader node still there: false
	// new session: true
}

// A rule loses the reply of a create after the server applied it: the client
// sees zk.ErrConnectionClosed, yet the node exists — a "ghost".
func ExampleServer_LoseReplies() {
	srv := zkfake.NewServer()
	defer srv.Close()
	conn, _, _ := srv.Connect(10 * time.Second)
	defer conn.Close()

	srv.LoseReplies(zkfake.ReplyLoss{Op: "create", PathPrefix: "/ghost", Applied: true})
	_, err := conn.Create("/ghost", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	ok, _, _ := conn.Exists("/ghost")
	fmt.Println(err, "- exists anyway:", ok)
	// Output:
	// zk: connection closed - exists anyway: true
}

// A partition healed before the client notices it is invisible: the request
// sent meanwhile just waits for its reply.
func ExampleConn_Partition() {
	srv := zkfake.NewServer()
	defer srv.Close()
	conn, _, _ := srv.Connect(10 * time.Second)
	defer conn.Close()

	conn.Partition()
	done := make(chan error)
	go func() {
		_, err := conn.Create("/sent-during-partition", nil, 0, zk.WorldACL(zk.PermAll))
		done <- err
	}()
	conn.Heal()
	fmt.Println(<-done, conn.State())
	// Output:
	// <nil> StateHasSession
}

// A crashed client stops talking: its calls fail at once so its goroutines
// can end, and the server expires its session when the timeout passes.
func ExampleConn_Crash() {
	srv := zkfake.NewServer()
	defer srv.Close()
	conn, events, _ := srv.Connect(10 * time.Second)
	conn.Crash()

	_, _, err := conn.Get("/")
	fmt.Println(err)
	for range events {
	} // the event channel is closed
	fmt.Println("session still live until its timeout:", len(srv.Sessions()))
	// Output:
	// zk: connection closed
	// session still live until its timeout: 1
}

// Pause freezes a client, as a long garbage-collection pause does; Resume
// thaws it. On a server with a manual clock, FastForward moves time.
func ExampleConn_Pause() {
	srv := zkfake.NewServer(zkfake.WithManualClock(time.Unix(0, 0)))
	defer srv.Close()
	conn, _, _ := srv.Connect(10 * time.Second)
	defer conn.Close()
	old := conn.SessionID()

	conn.Pause()
	srv.FastForward(11 * time.Second) // past the session timeout
	conn.Resume()
	fmt.Println("expired while paused:", conn.SessionID() != old)
	// Output:
	// expired while paused: true
}

// A lagging follower serves stale reads to the sessions connected to it,
// until they write or Sync.
func ExampleServer_SetLagging() {
	srv := zkfake.NewServer(zkfake.WithEnsemble(3))
	defer srv.Close()
	writer, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(0))
	reader, _, _ := srv.Connect(10*time.Second, zkfake.WithMember(1))
	writer.Create("/config", []byte("v1"), 0, zk.WorldACL(zk.PermAll))

	srv.SetLagging(1, true)
	writer.Set("/config", []byte("v2"), -1)
	stale, _, _ := reader.Get("/config")
	reader.Sync("/config")
	fresh, _, _ := reader.Get("/config")
	fmt.Printf("before sync %s, after sync %s\n", stale, fresh)
	// Output:
	// before sync v1, after sync v2
}

// Random losses, drawn from the server's seed, exercise a client's retry
// logic; the same seed loses the same requests.
func ExampleServer_LoseRandomReplies() {
	srv := zkfake.NewServer(zkfake.WithSeed(42))
	defer srv.Close()
	conn, _, _ := srv.Connect(10 * time.Second)
	defer conn.Close()

	srv.LoseRandomReplies(0.5)
	lost := 0
	for i := 0; i < 100; i++ {
		if _, err := conn.Create(fmt.Sprintf("/n%d", i), nil, 0, zk.WorldACL(zk.PermAll)); err == zk.ErrConnectionClosed {
			lost++
		}
	}
	fmt.Println("some lost, not all:", lost > 0 && lost < 100)
	// Output:
	// some lost, not all: true
}

// SetSequence starts a parent's sequence counter where a test needs it —
// here just short of the signed 32-bit wrap, which a real server reaches
// only after 2^31 creates under one parent.
func ExampleServer_SetSequence() {
	srv := zkfake.NewServer()
	defer srv.Close()
	conn, _, _ := srv.Connect(10 * time.Second)
	defer conn.Close()
	conn.Create("/queue", nil, zk.FlagPersistent, zk.WorldACL(zk.PermAll))

	srv.SetSequence("/queue", math.MaxInt32-1)
	for i := 0; i < 3; i++ {
		path, _ := conn.Create("/queue/item-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
		fmt.Println(path)
	}
	// Output:
	// /queue/item-2147483646
	// /queue/item-2147483647
	// /queue/item--2147483648
}
