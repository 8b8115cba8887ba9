package linearizability

import (
	"fmt"
	"slices"

	"github.com/anishathalye/porcupine"
)

// BarrierOp is an operation on a barrier or a double barrier (ZooKeeper's
// recipe, Curator's DistributedDoubleBarrier, kazoo's DoubleBarrier).
// Record an Enter as a BarrierArrive spanning the call and, if it let the
// session through, a BarrierPass spanning it too; a Leave as a
// BarrierDepart and, if it returned once everyone had left, a BarrierLeft.
type BarrierOp uint8

// Barrier operations.
const (
	// BarrierArrive: the session joined the barrier (its node made).
	BarrierArrive BarrierOp = iota + 1
	// BarrierPass: the session went through; legal only once Size
	// sessions were in the barrier at once.
	BarrierPass
	// BarrierDepart: the session left (its node deleted).
	BarrierDepart
	// BarrierLeft: the session's Leave returned, saying everyone has
	// left; legal only once every session that arrived has departed, or
	// its session has expired.
	BarrierLeft
)

// String names the operation.
func (o BarrierOp) String() string {
	switch o {
	case BarrierArrive:
		return "arrive"
	case BarrierPass:
		return "pass"
	case BarrierDepart:
		return "depart"
	case BarrierLeft:
		return "left"
	}
	return fmt.Sprintf("BarrierOp(%d)", uint8(o))
}

// BarrierInput is the input of a barrier operation. A history for
// [BarrierModel] holds BarrierInput and [SessionExpiry] inputs; outputs are
// ignored, for what an operation claims is in its Op.
type BarrierInput struct {
	Op BarrierOp
	// Barrier names the barrier; histories are checked one barrier at a
	// time.
	Barrier string
	// Size is the barrier's count of members; every operation on a
	// barrier must give the same.
	Size    int
	Session int64
}

// String describes the operation the way reports show it.
func (in BarrierInput) String() string {
	return fmt.Sprintf("%s %s of %s (%d members)", sessionName(in.Session), in.Op, in.Barrier, in.Size)
}

// barrierState is the sessions that have arrived, and those gone again (a
// departure or an expiry), each sorted; opened is set once Size members
// were in the barrier at once.
type barrierState struct {
	arrived, gone []int64
	opened        bool
}

// present counts the sessions that arrived and have not gone.
func (s barrierState) present() int {
	n := 0
	for _, a := range s.arrived {
		if _, gone := slices.BinarySearch(s.gone, a); !gone {
			n++
		}
	}
	return n
}

func (s barrierState) with(set []int64, session int64) []int64 {
	if i, found := slices.BinarySearch(set, session); !found {
		return slices.Insert(slices.Clip(set), i, session)
	}
	return set
}

func barrierStep(state, input, output any) (bool, any) {
	s := state.(barrierState)
	if e, ok := input.(SessionExpiry); ok {
		if _, arrived := slices.BinarySearch(s.arrived, e.Session); arrived {
			s.gone = s.with(s.gone, e.Session)
		}
		return true, s
	}
	in := input.(BarrierInput)
	switch in.Op {
	case BarrierArrive:
		s.arrived = s.with(s.arrived, in.Session)
		s.opened = s.opened || s.present() >= in.Size
		return true, s
	case BarrierPass:
		return s.opened, s
	case BarrierDepart:
		s.gone = s.with(s.gone, in.Session)
		return true, s
	case BarrierLeft:
		for _, a := range s.arrived {
			if _, gone := slices.BinarySearch(s.gone, a); !gone {
				return false, s
			}
		}
		return true, s
	}
	return false, s
}

var barrierModel = porcupine.Model{
	Partition: partitionByInput(func(in BarrierInput) string { return in.Barrier }),
	Init:      func() any { return barrierState{} },
	Step:      barrierStep,
	Equal: func(a, b any) bool {
		x, y := a.(barrierState), b.(barrierState)
		return x.opened == y.opened && slices.Equal(x.arrived, y.arrived) && slices.Equal(x.gone, y.gone)
	},
	Hash: func(state any) uint64 {
		s := state.(barrierState)
		h := newHasher().bool(s.opened).int(int64(len(s.arrived)))
		for _, a := range s.arrived {
			h = h.int(a)
		}
		for _, g := range s.gone {
			h = h.int(g)
		}
		return uint64(h)
	},
	DescribeOperation: func(input, _ any) string { return fmt.Sprint(input) },
	DescribeState: func(state any) string {
		s := state.(barrierState)
		return fmt.Sprintf("arrived: [%s]; gone: [%s]", sessionNames(s.arrived), sessionNames(s.gone))
	},
}

// BarrierModel returns the porcupine model of a single-use barrier or
// double barrier: nobody passes before Size sessions were in it at once
// (arrived, and not departed nor expired; once it opened, a later member
// may pass, as ZooKeeper's recipe lets it), and
// nobody's Leave says everyone has left before every session that arrived
// has departed or expired. An arrival whose outcome is unknown (its create
// unanswered) may count from any instant after its call, or never.
func BarrierModel() porcupine.Model { return barrierModel }
