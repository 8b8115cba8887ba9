package linearizability_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/linearizability"
	"pgregory.net/rapid"
)

// TestPropertySequentialMutexHistoriesAreLegal: any history in which each
// operation completes before the next starts, recorded from a correct lock,
// checks Ok.
func TestPropertySequentialMutexHistoriesAreLegal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		svc := newLockService()
		res := &resource{fenced: rapid.Bool().Draw(t, "fenced")}
		var h builder
		holding := map[int64]int64{} // session → token
		steps := rapid.IntRange(0, 60).Draw(t, "steps")
		for i := range steps {
			session := rapid.Int64Range(1, 4).Draw(t, "session")
			in := linearizability.MutexInput{Lock: "/lock", Session: session}
			var out linearizability.MutexOutput
			switch rapid.IntRange(0, 4).Draw(t, "op") {
			case 0, 1:
				in.Op = linearizability.TryLock
				out.Token, out.OK = svc.take(session)
				if out.OK {
					holding[session] = out.Token
				}
			case 2:
				in.Op = linearizability.Release
				out.OK = svc.release(session)
				delete(holding, session)
			case 3:
				in.Op = linearizability.Write
				token, holds := holding[session]
				if !holds && !res.fenced {
					continue // an unfenced resource is written only by the holder
				}
				if res.fenced {
					in.Token = max(token, rapid.Int64Range(1, 3).Draw(t, "token"))
				}
				out.OK = res.write(in.Token)
			case 4:
				svc.expire(session)
				delete(holding, session)
				h.expire(session, int64(2*i), int64(2*i))
				continue
			}
			h.op(int(session), int64(2*i), int64(2*i+1), in, out)
		}
		if res, err := linearizability.CheckMutex(h.h, 0); err != nil || res.Outcome != linearizability.Ok {
			t.Fatalf("got %v, %v; want Ok", res, err)
		}
	})
}

// TestPropertySequentialZnodeHistoriesAreLegal: any sequential history of
// random operations, served by the stand-in with stale reads, checks Ok; and
// changing what one read returned to data never written makes it illegal.
func TestPropertySequentialZnodeHistoriesAreLegal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		initial := standInInitial()
		store := newZKStandIn(rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 0)), initial)
		var h builder
		steps := rapid.IntRange(0, 60).Draw(t, "steps")
		firstRead := -1
		for i := range steps {
			session := rapid.Int64Range(1, 3).Draw(t, "session")
			in := linearizability.ZnodeInput{
				Op:      rapid.SampledFrom([]linearizability.ZnodeOp{linearizability.Create, linearizability.Delete, linearizability.Set, linearizability.Get, linearizability.Exists, linearizability.Children, linearizability.Sync}).Draw(t, "op"),
				Session: session,
				Path:    rapid.SampledFrom([]string{"/t/a/x", "/t/a/y", "/t/b/x", "/t/a", "/t/b"}).Draw(t, "path"),
				Data:    fmt.Sprint(rapid.IntRange(0, 3).Draw(t, "data")),
				Version: int32(rapid.IntRange(-1, 2).Draw(t, "version")),
			}
			if in.Op == linearizability.Create {
				in.Flags = rapid.SampledFrom([]int32{0, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeral | zk.FlagSequence}).Draw(t, "flags")
				if in.Flags&zk.FlagSequence != 0 {
					// under a directory the model tracks, or the
					// sequence number could not be known
					in.Path = rapid.SampledFrom(testDirs).Draw(t, "dir") + "/s-"
				}
			}
			out := store.do(in)
			if in.Op == linearizability.Get && out.Err == nil && firstRead < 0 {
				firstRead = len(h.h.Operations)
			}
			h.op(int(session), int64(2*i), int64(2*i+1), in, out)
		}
		initialState := initialZnodes(initial, testDirs...)
		if res, err := linearizability.CheckZnodes(h.h, 0, initialState...); err != nil || res.Outcome != linearizability.Ok {
			t.Fatalf("got %v, %v; want Ok", res, err)
		}
		if firstRead < 0 {
			return
		}
		out := h.h.Operations[firstRead].Output.(linearizability.ZnodeOutput)
		out.Data = "never written"
		h.h.Operations[firstRead].Output = out
		if res, err := linearizability.CheckZnodes(h.h, 0, initialState...); err != nil || res.Outcome != linearizability.Illegal {
			t.Fatalf("with a read of data never written: got %v, %v; want Illegal", res, err)
		}
	})
}

// TestPropertySimulatedHistoriesAreLegal: concurrent histories with
// crashes, expiries and stale reads, from correct stand-ins, check Ok.
func TestPropertySimulatedHistoriesAreLegal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seed := rapid.Uint64().Draw(t, "seed")
		ops := rapid.IntRange(1, 300).Draw(t, "ops")
		unknown := rapid.IntRange(0, 4).Draw(t, "unknown")
		if res, err := linearizability.CheckMutex(simulateMutex(seed, ops, unknown), time.Minute); err != nil || res.Outcome != linearizability.Ok {
			t.Fatalf("mutex: got %v, %v; want Ok", res, err)
		}
		h, initial := simulateZnodes(seed, ops, unknown)
		if res, err := linearizability.CheckZnodes(h, time.Minute, initial...); err != nil || res.Outcome != linearizability.Ok {
			t.Fatalf("znodes: got %v, %v; want Ok", res, err)
		}
	})
}
