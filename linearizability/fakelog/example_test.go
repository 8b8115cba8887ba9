package fakelog_test

import (
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/linearizability"
	"github.com/zksim/zksim/linearizability/fakelog"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/zktest"
)

// Three clients work on a fake server that loses one request or reply in
// ten. Their calls with an unknown outcome are settled from the fake's log,
// and the settled history checks with nothing left unknown. (In a test, run
// Record inside synctest.Test, with Lockstep for a history that the seed
// alone decides.)
func Example() {
	srv := zkfake.NewServer(zkfake.WithSeed(1))
	defer srv.Close()
	admin, _, _ := srv.Connect(10 * time.Second)
	admin.Create("/app", nil, 0, zk.WorldACL(zk.PermAll))
	admin.Close()
	srv.LoseRandomReplies(0.1)

	rec, err := fakelog.Record(fakelog.Config{
		Connect: func() (zktest.Conn, error) {
			conn, _, err := srv.Connect(10 * time.Second)
			return conn, err
		},
		Base:    "/app",
		Clients: 3,
		Ops:     50,
		Seed:    1,
	})
	if err != nil {
		panic(err)
	}
	settled, err := fakelog.Settle(rec.Recorder, srv)
	if err != nil {
		panic(err)
	}
	res, err := linearizability.CheckZnodes(settled, time.Minute)
	if err != nil {
		panic(err)
	}
	fmt.Println("calls with an unknown outcome:", rec.Stats.Unknown > 0)
	fmt.Println("settled:", res.Outcome, "with", res.UnknownOperations, "unknown")
	// Output:
	// calls with an unknown outcome: true
	// settled: Ok with 0 unknown
}

// A set whose reply is lost: the client cannot tell whether it happened;
// the fake's log can, and it also knows what the server answered.
func ExampleGroundTruth() {
	srv := zkfake.NewServer()
	defer srv.Close()
	admin, _, _ := srv.Connect(10 * time.Second)
	admin.Create("/config", []byte("v0"), 0, zk.WorldACL(zk.PermAll))
	admin.Close()

	// Every request of a recorded session must be in the history.
	conn, _, _ := srv.Connect(10 * time.Second)
	srv.LoseReplies(zkfake.ReplyLoss{Op: "setData", Applied: true})
	rec := linearizability.NewRecorder(nil)
	in := linearizability.ZnodeInput{Op: linearizability.Set, Session: conn.SessionID(), Path: "/config", Data: "v1", Version: -1}
	op := rec.Call(0, in)
	if _, err := conn.Set(in.Path, []byte(in.Data), in.Version); err != nil {
		fmt.Println("set:", err)
		op.Unknown()
	}

	h := rec.History()
	fate := fakelog.GroundTruth(srv, h).Fate(h.Operations[0], time.Time{})
	out := fate.Output.(linearizability.ZnodeOutput)
	fmt.Println("applied:", fate.Verdict == linearizability.Applied, "new version:", out.Stat.Version)

	settled, _ := rec.Settle(fakelog.GroundTruth(srv, h))
	res, _ := linearizability.CheckZnodes(settled, time.Minute, linearizability.Znode{Path: "/config", Data: "v0"})
	fmt.Println(res)
	// Output:
	// set: zk: connection closed
	// applied: true new version: 1
	// Ok (1 operations, 0 with unknown outcome)
}
