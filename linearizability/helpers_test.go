package linearizability_test

import (
	"testing"
	"time"

	"github.com/zksim/zksim/linearizability"
)

// builder builds histories by hand. Timestamps are plain numbers.
type builder struct {
	h linearizability.History
}

// op adds an operation by client over [call, ret]; a nil output means the
// outcome is unknown, and then ret is ignored.
func (b *builder) op(client int, call, ret int64, in, out any) *builder {
	if out == nil {
		ret = linearizability.Never
	}
	b.h.Operations = append(b.h.Operations, linearizability.Operation{ClientID: client, Input: in, Output: out, Call: call, Return: ret})
	return b
}

// expire adds a session expiry known to lie within [from, to].
func (b *builder) expire(session int64, from, to int64) *builder {
	b.h.Operations = append(b.h.Operations, linearizability.Operation{
		ClientID: 99, Input: linearizability.SessionExpiry{Session: session}, Call: from, Return: to,
	})
	return b
}

func checkMutex(t *testing.T, h linearizability.History) linearizability.Result {
	t.Helper()
	res, err := linearizability.CheckMutex(h, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func checkZnodes(t *testing.T, h linearizability.History, initial ...linearizability.Znode) linearizability.Result {
	t.Helper()
	res, err := linearizability.CheckZnodes(h, 10*time.Second, initial...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// wantOutcome fails the test if res is not want, and leaves a report to
// look at when the check found a violation nobody expected.
func wantOutcome(t *testing.T, res linearizability.Result, want linearizability.Outcome) {
	t.Helper()
	if res.Outcome == want {
		return
	}
	if res.Outcome == linearizability.Illegal {
		if path, err := res.WriteReport(""); err == nil {
			t.Logf("report: %s", path)
		}
	}
	t.Fatalf("got %v, want %v", res, want)
}
