package fuzz

import (
	"fmt"
	"math"
	"runtime"
	"strings"

	"github.com/zksim/zksim/zkfake/zktest"
)

// This file is the order in which a client's requests that wait at the
// gate together go, when the draw does not choose (see chooseRequest): the
// same in every run, whichever goroutine registered first.

// newCallRequest is the request of a call, made on the calling goroutine:
// in process, with where the call was made (see request.before); at a real
// client's gate, where the server numbered it, without.
func newCallRequest(req zktest.Request, atServer bool) *request {
	r := &request{method: req.Op, path: req.Path, detail: req.Detail, watch: req.Watch, arrival: req.Arrival}
	if !atServer {
		r.callers = callersOf()
	}
	return r
}

// key orders requests of one client that are pending at once (the client
// loop and a locker's own goroutine), so that which goes first does not
// depend on which goroutine registered first, nor on the random GUIDs in
// node names (stable): two Deletes of protected nodes go in the order of
// their sequence numbers. Calls to the server come before points; at a
// real client's gate, calls go in the order the server read them.
func (r *request) key() string {
	return fmt.Sprintf("%d\x00%s\x00%s\x00%s", r.point, r.method, StableName(r.path), r.detail)
}

// before orders two requests of one client that wait together: by rank,
// then by key, and two identical calls by where they were made. Two of a
// recipe's goroutines may make the same call at one instant (a lock loop
// and a background search for its node both list the lock's directory
// when a retry's sleep ends); which reaches the gate first is the
// scheduler's choice, and whichever goroutine the harness answers first
// goes on first, so a seed would not tell its story the same way twice.
// Two goroutines alike, calling from one place, still go in the order they
// came; their stories differ only if they would go on differently.
func (r *request) before(o *request) bool {
	if ra, rb := r.rank(), o.rank(); ra != rb {
		return ra < rb
	}
	if kr, ko := r.key(), o.key(); kr != ko {
		return kr < ko
	}
	return r.callSite() < o.callSite()
}

// callersOf is the stack of the goroutine that calls it, from its caller
// out.
func callersOf() []uintptr {
	pcs := make([]uintptr, 64)
	return pcs[:runtime.Callers(2, pcs)]
}

// callSite renders where the call was made as its stack's functions and
// lines, outermost first, which do not depend on where the binary was
// loaded. They do depend on the source, the toolchain and its flags (a
// closure's name moves with inlining): a fail file replays on the build
// that wrote it.
func (r *request) callSite() string {
	if r.site == "" && r.callers != nil {
		r.site = renderStack(r.callers)
	}
	return r.site
}

// renderStack renders a stack as its functions and lines, outermost
// first.
func renderStack(pcs []uintptr) string {
	var b strings.Builder
	frames := runtime.CallersFrames(pcs)
	var sites []string
	for {
		f, more := frames.Next()
		sites = append(sites, fmt.Sprintf("%s:%d", f.Function, f.Line))
		if !more {
			break
		}
	}
	for i := len(sites) - 1; i >= 0; i-- {
		b.WriteString(sites[i])
		b.WriteByte('\n')
	}
	return b.String()
}

// rank places a request the server numbered (at a real client's gate)
// by the order the server read it, ahead of those it did not number.
func (r *request) rank() int64 {
	if r.arrival != 0 {
		return r.arrival
	}
	return math.MaxInt64
}
