package fake_test

import (
	"testing"

	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/zktest"
	"github.com/zksim/zksim/zkfake/zktest/fake"
)

// TestConformance runs the whole conformance suite against the fake. The
// same scenarios run against a real ensemble in package zkfake/zktest/ensemble.
func TestConformance(t *testing.T) {
	zktest.Run(t, fake.NewTarget())
}

// TestConformanceShuffledChildren runs the suite again with listings in a
// seeded order, as a real server's come in an order of its own: no
// scenario may depend on the order of children.
func TestConformanceShuffledChildren(t *testing.T) {
	zktest.Run(t, fake.NewTarget(zkfake.WithShuffledChildren()))
}
