package linearizability

import (
	"fmt"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// QueueInput is an operation on a distributed queue of ZooKeeper's kind:
// Put adds Item at the tail (a sequential node), a take removes the head.
// Items must be distinct. A history for [QueueModel] holds QueueInput and
// [SessionExpiry] inputs.
type QueueInput struct {
	// Queue names the queue; histories are checked one queue at a time.
	Queue string
	Put   bool
	Item  string
}

// QueueOutput is what a take got: the item, or Empty when it found the
// queue empty (a take that does not wait). A put's output is ignored.
type QueueOutput struct {
	Item  string
	Empty bool
}

// String describes the operation the way reports show it.
func (in QueueInput) String() string {
	if in.Put {
		return fmt.Sprintf("put %q in %s", in.Item, in.Queue)
	}
	return "take from " + in.Queue
}

func queueStep(state, input, output any) (bool, any) {
	in, ok := input.(QueueInput)
	if !ok {
		return true, state
	}
	items := state.([]string)
	if in.Put {
		return true, append(slices.Clip(items), in.Item)
	}
	out, known := output.(QueueOutput)
	switch {
	case !known:
		// A take of unknown outcome took the head, if there was one.
		if len(items) == 0 {
			return true, items
		}
		return true, items[1:]
	case out.Empty:
		return len(items) == 0, items
	default:
		return len(items) > 0 && items[0] == out.Item, items[min(1, len(items)):]
	}
}

var queueModel = porcupine.Model{
	Partition: partitionByInput(func(in QueueInput) string { return in.Queue }),
	Init:      func() any { return []string(nil) },
	Step:      queueStep,
	Equal:     func(a, b any) bool { return slices.Equal(a.([]string), b.([]string)) },
	Hash: func(state any) uint64 {
		h := newHasher()
		for _, item := range state.([]string) {
			h = h.string(item)
		}
		return uint64(h)
	},
	DescribeOperation: func(input, output any) string {
		switch out, ok := output.(QueueOutput); {
		case ok && out.Empty:
			return fmt.Sprintf("%v → empty", input)
		case ok:
			return fmt.Sprintf("%v → %q", input, out.Item)
		}
		return fmt.Sprint(input)
	},
	DescribeState: func(state any) string { return "[" + strings.Join(state.([]string), " ") + "]" },
}

// QueueModel returns the porcupine model of a FIFO queue: every item put is
// taken at most once, in the order of the puts, and a take that found the
// queue empty did so when it held nothing. A put whose outcome is unknown
// may apply at any instant after its call, or never; a take whose outcome
// is unknown took the head, if any, at some instant after its call — a
// queue whose take lost its reply after the delete has lost that item, and
// the model says so only if a later take returns something else.
func QueueModel() porcupine.Model { return queueModel }
