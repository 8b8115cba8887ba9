package fuzz

import "testing"

// TestARealClientsCallsGoInTheOrderTheServerReadThem holds the gate to
// ZooKeeper's order within a session: of a real client's calls that wait
// together, the one the server read first goes first, whatever the order
// of their method and path and whatever the move drew; in process, where
// the order the calls were made is the scheduler's, the draw picks.
func TestARealClientsCallsGoInTheOrderTheServerReadThem(t *testing.T) {
	calls := func(arrivals ...int64) *incarnation {
		return &incarnation{pending: []*request{
			{method: "create", path: "/lock/n", arrival: arrivals[0]},
			{method: "exists", path: "/lock/n", arrival: arrivals[1]},
			{method: "getChildren", path: "/lock", arrival: arrivals[2]},
			{point: pointOp},
		}}
	}
	for which := range 4 {
		if got := calls(3, 1, 2).chooseRequest(which); got.method != "exists" {
			t.Errorf("real client, sent exists, getChildren, create, draw %d: %s went first", which, got.method)
		}
	}
	want := []string{"create", "exists", "getChildren", "create"}
	for which, w := range want {
		if got := calls(0, 0, 0).chooseRequest(which); got.method != w {
			t.Errorf("in process, draw %d: %s went first, want %s", which, got.method, w)
		}
	}
}
