package linearizability

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// RegisterInput is an operation on a register: a value that writes replace
// and reads return, such as a znode's data or a lease's. A history for
// [RegisterModel] holds RegisterInput and [SessionExpiry] inputs.
type RegisterInput struct {
	// Register names the register; histories are checked one register at
	// a time.
	Register string
	// Write is true for a write of Value, false for a read.
	Write bool
	Value string
}

// RegisterOutput is what a read returned: the value ("" for a register
// never written). A write's output is ignored: record it with any output
// once it is known to have applied, and as unknown if it may not have.
type RegisterOutput struct{ Value string }

// String describes the operation the way reports show it.
func (in RegisterInput) String() string {
	if in.Write {
		return fmt.Sprintf("write %q to %s", in.Value, in.Register)
	}
	return "read " + in.Register
}

func registerStep(state, input, output any) (bool, any) {
	in, ok := input.(RegisterInput)
	if !ok {
		return true, state // a session's expiry changes no value
	}
	if in.Write {
		return true, in.Value
	}
	out, known := output.(RegisterOutput)
	return !known || out.Value == state.(string), state
}

var registerModel = porcupine.Model{
	Partition: partitionByInput(func(in RegisterInput) string { return in.Register }),
	Init:      func() any { return "" },
	Step:      registerStep,
	Hash:      func(state any) uint64 { return uint64(newHasher().string(state.(string))) },
	DescribeOperation: func(input, output any) string {
		if out, ok := output.(RegisterOutput); ok {
			return fmt.Sprintf("%v → %q", input, out.Value)
		}
		return fmt.Sprint(input)
	},
	DescribeState: func(state any) string { return fmt.Sprintf("%q", state) },
}

// RegisterModel returns the porcupine model of registers: every read
// returns the value of the latest write before it ("" before any). A write
// whose outcome is unknown (recorded so, or with a nil output) may apply
// at any instant after its call, or never; a write the caller knows
// failed is left out. Use it for the shared state a lock or a lease
// protects, with Recipe.Read making the reads: a write from a holder that
// lost its lease, applied after the next holder's, is a read that returns
// the stale value.
func RegisterModel() porcupine.Model { return registerModel }
