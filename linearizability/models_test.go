package linearizability_test

import (
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/zksim/zksim/linearizability"
)

// op is one operation of a test history: its client, input, output, and
// its call and return on a clock of the test's own.
type op struct {
	client    int
	in, out   any
	call, ret int64
}

func checkOps(t *testing.T, model porcupine.Model, ops []op) linearizability.Outcome {
	t.Helper()
	var h linearizability.History
	for _, o := range ops {
		h.Operations = append(h.Operations, linearizability.Operation{ClientID: o.client, Input: o.in, Output: o.out, Call: o.call, Return: o.ret})
	}
	res, err := linearizability.Check(h, model, 0)
	if err != nil {
		t.Fatal(err)
	}
	return res.Outcome
}

// TestReadyModels holds each ready-made model to a legal history and to
// the same history broken in the way the model is there to catch.
func TestReadyModels(t *testing.T) {
	const never = linearizability.Never
	w := func(v string) linearizability.RegisterInput {
		return linearizability.RegisterInput{Register: "r", Write: true, Value: v}
	}
	read := linearizability.RegisterInput{Register: "r"}
	add := func(n int64) linearizability.CounterInput { return linearizability.CounterInput{Counter: "c", Add: n} }
	get := linearizability.CounterInput{Counter: "c", Read: true}
	put := func(item string) linearizability.QueueInput {
		return linearizability.QueueInput{Queue: "q", Put: true, Item: item}
	}
	take := linearizability.QueueInput{Queue: "q"}
	b := func(o linearizability.BarrierOp, session int64) linearizability.BarrierInput {
		return linearizability.BarrierInput{Op: o, Barrier: "b", Size: 2, Session: session}
	}
	cases := []struct {
		name  string
		model porcupine.Model
		ok    []op
		bad   []op
	}{
		{"register: a stale write read after the newer one", linearizability.RegisterModel(),
			[]op{{0, w("old"), struct{}{}, 0, 10}, {1, w("new"), struct{}{}, 5, 20}, {2, read, linearizability.RegisterOutput{Value: "new"}, 30, 31}},
			[]op{{0, w("old"), struct{}{}, 0, 10}, {1, w("new"), struct{}{}, 12, 20}, {2, read, linearizability.RegisterOutput{Value: "old"}, 30, 31}}},
		{"register: an unknown write may never apply", linearizability.RegisterModel(),
			[]op{{0, w("lost"), nil, 0, never}, {1, read, linearizability.RegisterOutput{}, 5, 6}},
			[]op{{0, w("x"), struct{}{}, 0, 1}, {1, read, linearizability.RegisterOutput{}, 5, 6}}},
		{"counter: an increment applied twice", linearizability.CounterModel(),
			[]op{{0, add(1), nil, 0, 10}, {1, add(1), linearizability.CounterOutput{Value: 2}, 5, 20}, {2, get, linearizability.CounterOutput{Value: 2}, 30, 31}},
			[]op{{0, add(1), nil, 0, 10}, {1, add(1), linearizability.CounterOutput{Value: 2}, 5, 20}, {2, get, linearizability.CounterOutput{Value: 3}, 30, 31}}},
		{"queue: items taken out of order, or twice", linearizability.QueueModel(),
			[]op{{0, put("a"), struct{}{}, 0, 1}, {0, put("b"), struct{}{}, 2, 3}, {1, take, linearizability.QueueOutput{Item: "a"}, 4, 5}, {2, take, linearizability.QueueOutput{Item: "b"}, 6, 7}, {2, take, linearizability.QueueOutput{Empty: true}, 8, 9}},
			[]op{{0, put("a"), struct{}{}, 0, 1}, {0, put("b"), struct{}{}, 2, 3}, {1, take, linearizability.QueueOutput{Item: "a"}, 4, 5}, {2, take, linearizability.QueueOutput{Item: "a"}, 6, 7}}},
		{"barrier: one member passes alone", linearizability.BarrierModel(),
			[]op{{0, b(linearizability.BarrierArrive, 1), struct{}{}, 0, 10}, {0, b(linearizability.BarrierPass, 1), struct{}{}, 0, 10}, {1, b(linearizability.BarrierArrive, 2), struct{}{}, 5, 6}},
			[]op{{0, b(linearizability.BarrierArrive, 1), struct{}{}, 0, 4}, {0, b(linearizability.BarrierPass, 1), struct{}{}, 0, 4}, {1, b(linearizability.BarrierArrive, 2), struct{}{}, 5, 6}}},
		{"barrier: a member passes with the one before it gone", linearizability.BarrierModel(),
			[]op{{0, b(linearizability.BarrierArrive, 1), struct{}{}, 0, 1}, {1, b(linearizability.BarrierArrive, 2), struct{}{}, 2, 3}, {1, b(linearizability.BarrierPass, 2), struct{}{}, 2, 5}, {0, linearizability.SessionExpiry{Session: 1}, struct{}{}, 6, 6}, {2, b(linearizability.BarrierArrive, 3), struct{}{}, 7, 8}, {2, b(linearizability.BarrierPass, 3), struct{}{}, 7, 8}},
			[]op{{0, b(linearizability.BarrierArrive, 1), struct{}{}, 0, 1}, {0, linearizability.SessionExpiry{Session: 1}, struct{}{}, 2, 2}, {1, b(linearizability.BarrierArrive, 2), struct{}{}, 3, 4}, {1, b(linearizability.BarrierPass, 2), struct{}{}, 3, 4}}},
		{"queue: a take of unknown outcome may have taken the head", linearizability.QueueModel(),
			[]op{{0, put("a"), struct{}{}, 0, 1}, {0, put("b"), struct{}{}, 2, 3}, {1, take, nil, 4, linearizability.Never}, {2, take, linearizability.QueueOutput{Item: "b"}, 6, 7}},
			[]op{{0, put("a"), struct{}{}, 0, 1}, {0, put("b"), struct{}{}, 2, 3}, {1, take, nil, 4, linearizability.Never}, {2, take, linearizability.QueueOutput{Item: "c"}, 6, 7}}},
		{"double barrier: a Leave that returns before everyone left", linearizability.BarrierModel(),
			[]op{{0, b(linearizability.BarrierArrive, 1), struct{}{}, 0, 1}, {1, b(linearizability.BarrierArrive, 2), struct{}{}, 0, 1}, {0, b(linearizability.BarrierDepart, 1), struct{}{}, 2, 3}, {1, linearizability.SessionExpiry{Session: 2}, struct{}{}, 4, 4}, {0, b(linearizability.BarrierLeft, 1), struct{}{}, 2, 5}},
			[]op{{0, b(linearizability.BarrierArrive, 1), struct{}{}, 0, 1}, {1, b(linearizability.BarrierArrive, 2), struct{}{}, 0, 1}, {0, b(linearizability.BarrierDepart, 1), struct{}{}, 2, 3}, {0, b(linearizability.BarrierLeft, 1), struct{}{}, 2, 5}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := checkOps(t, c.model, c.ok); got != linearizability.Ok {
				t.Errorf("legal history: %v", got)
			}
			if got := checkOps(t, c.model, c.bad); got != linearizability.Illegal {
				t.Errorf("broken history: %v, want illegal", got)
			}
		})
	}
}
