package ensemble_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake/zktest"
	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

// ParseServers checks a ZK_SERVERS value: loopback addresses only.
func ExampleParseServers() {
	servers, err := ensemble.ParseServers("127.0.0.1:22181, 127.0.0.1:22182,127.0.0.1:22183")
	fmt.Println(servers, err)
	_, err = ensemble.ParseServers("10.1.2.3:2181")
	fmt.Println(err)
	// Output:
	// [127.0.0.1:22181 127.0.0.1:22182 127.0.0.1:22183] <nil>
	// server "10.1.2.3:2181": only loopback IP addresses (such as 127.0.0.1) are allowed
}

// A test that runs the conformance suite, or any scenario of its own,
// against the real ensemble. Without ZK_SERVERS it is skipped.
func ExampleNewTarget() {
	testConformance := func(t *testing.T) {
		target := ensemble.NewTarget(ensemble.Servers(t))
		zktest.Run(t, target)

		target.Run(t, "my-scenario", func(t *testing.T, env zktest.Env) {
			conn, _ := env.Connect(t, 4*time.Second)
			if _, err := conn.Create(env.Base()+"/lock", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			// Put a second session on another member, then expire the first.
			e := env.(*ensemble.Env)
			other, _ := e.ConnectTo(t, e.Members()-1, 4*time.Second)
			zktest.Require(t, e.Expire(conn))
			if ok, _, _ := other.Exists(env.Base() + "/lock"); ok {
				t.Fatal("the expired session's ephemeral is still there")
			}
		})
	}
	_ = testConformance // in a _test.go file: func TestConformance(t *testing.T) { ... }
}
