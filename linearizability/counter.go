package linearizability

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// CounterInput is an operation on a counter, such as kazoo's Counter or
// Curator's DistributedAtomicLong: an increment by Add (which may be
// negative), or a read when Read is set. A history for [CounterModel] holds
// CounterInput and [SessionExpiry] inputs.
type CounterInput struct {
	// Counter names the counter; histories are checked one counter at a
	// time.
	Counter string
	Add     int64
	Read    bool
}

// CounterOutput is the counter's value an operation saw: what a read
// returned, or the value an increment left (the post-value, as Curator's
// AtomicValue.postValue). An increment that applied and tells no value
// records another output (struct{}{}); one whose outcome is unknown
// records nil, as for every model.
type CounterOutput struct{ Value int64 }

// String describes the operation the way reports show it.
func (in CounterInput) String() string {
	if in.Read {
		return "read " + in.Counter
	}
	return fmt.Sprintf("add %d to %s", in.Add, in.Counter)
}

func counterStep(state, input, output any) (bool, any) {
	in, ok := input.(CounterInput)
	if !ok {
		return true, state
	}
	value := state.(int64)
	if !in.Read {
		value += in.Add
	}
	out, known := output.(CounterOutput)
	return !known || out.Value == value, value
}

var counterModel = porcupine.Model{
	Partition: partitionByInput(func(in CounterInput) string { return in.Counter }),
	Init:      func() any { return int64(0) },
	Step:      counterStep,
	Hash:      func(state any) uint64 { return uint64(newHasher().int(state.(int64))) },
	DescribeOperation: func(input, output any) string {
		if out, ok := output.(CounterOutput); ok {
			return fmt.Sprintf("%v → %d", input, out.Value)
		}
		return fmt.Sprint(input)
	},
	DescribeState: func(state any) string { return fmt.Sprint(state) },
}

// CounterModel returns the porcupine model of counters that start at 0:
// every increment applies exactly once, and every value an operation saw
// is the sum of the increments before it. An increment whose outcome is
// unknown may apply at any instant after its call, or never; one retried
// after a lost reply and applied twice shows as a read above the sum.
func CounterModel() porcupine.Model { return counterModel }
