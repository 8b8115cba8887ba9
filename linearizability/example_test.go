package linearizability_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/zksim/zksim/linearizability"
)

// Three clients take turns on a lock, each in its own session; a sync.Mutex
// stands in for the lock recipe under test. The recorder notes every call
// and return, and the check confirms that no two sessions held the lock at
// once.
func ExampleCheckMutex() {
	rec := linearizability.NewRecorder(nil) // inside a synctest bubble, timestamps are virtual
	var lock sync.Mutex
	var wg sync.WaitGroup
	for client := range 3 {
		wg.Go(func() {
			session := int64(client + 1)
			for range 5 {
				op := rec.Call(client, linearizability.MutexInput{Op: linearizability.Acquire, Lock: "/lock", Session: session})
				lock.Lock()
				op.Return(linearizability.MutexOutput{OK: true})

				op = rec.Call(client, linearizability.MutexInput{Op: linearizability.Release, Lock: "/lock", Session: session})
				lock.Unlock()
				op.Return(linearizability.MutexOutput{OK: true})
			}
		})
	}
	wg.Wait()

	res, err := linearizability.CheckMutex(rec.History(), time.Minute)
	if err != nil {
		panic(err)
	}
	fmt.Println(res)
	// Output: Ok (30 operations, 0 with unknown outcome)
}

// ZooKeeper lets a read be stale — but not after the session's own sync.
func ExampleCheckZnodes() {
	path := "/app/config"
	write := linearizability.Operation{
		ClientID: 0,
		Input:    linearizability.ZnodeInput{Op: linearizability.Set, Session: 1, Path: path, Data: "new", Version: -1},
		Output:   linearizability.ZnodeOutput{Stat: linearizability.ZnodeStat{Version: 1}},
		Call:     10, Return: 20,
	}
	staleRead := linearizability.Operation{
		ClientID: 1,
		Input:    linearizability.ZnodeInput{Op: linearizability.Get, Session: 2, Path: path},
		Output:   linearizability.ZnodeOutput{Data: "old"},
		Call:     40, Return: 50,
	}
	syncFirst := linearizability.Operation{
		ClientID: 1,
		Input:    linearizability.ZnodeInput{Op: linearizability.Sync, Session: 2, Path: path},
		Output:   linearizability.ZnodeOutput{},
		Call:     30, Return: 35,
	}
	initial := linearizability.Znode{Path: path, Data: "old"}

	without, _ := linearizability.CheckZnodes(linearizability.History{Operations: []linearizability.Operation{write, staleRead}}, time.Minute, initial)
	with, _ := linearizability.CheckZnodes(linearizability.History{Operations: []linearizability.Operation{write, syncFirst, staleRead}}, time.Minute, initial)
	fmt.Println("stale read:", without.Outcome)
	fmt.Println("stale read after sync:", with.Outcome)
	// Output:
	// stale read: Ok
	// stale read after sync: Illegal
}

// A holder pauses past its session timeout, its session expires, another
// session takes the lock, and the paused holder then writes the unfenced
// resource: the check finds the violation and the report shows it.
func ExampleResult_WriteReport() {
	op := func(client int, call, ret int64, in, out any) linearizability.Operation {
		return linearizability.Operation{ClientID: client, Input: in, Output: out, Call: call, Return: ret}
	}
	input := func(kind linearizability.MutexOp, session int64) linearizability.MutexInput {
		return linearizability.MutexInput{Op: kind, Lock: "/lock", Session: session}
	}
	ok := linearizability.MutexOutput{OK: true}
	h := linearizability.History{
		Operations: []linearizability.Operation{
			op(0, 0, 10, input(linearizability.Acquire, 1), ok),
			op(2, 50, 50, linearizability.SessionExpiry{Session: 1}, nil),
			op(1, 40, 70, input(linearizability.Acquire, 2), ok),
			op(0, 100, 110, input(linearizability.Write, 1), ok),
		},
		Faults: []linearizability.Fault{
			{Kind: linearizability.FaultExpiry, ClientID: 0, Detail: "process paused", Start: 20, End: 95},
		},
	}
	res, err := linearizability.CheckMutex(h, time.Minute)
	if err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "report-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path, err := res.WriteReport(dir)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Outcome, filepath.Dir(path) == dir, filepath.Ext(path))
	// Output: Illegal true .html
}
