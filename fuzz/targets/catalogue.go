package targets

import (
	"slices"
	"strings"

	"github.com/zksim/zksim/fuzz"
)

// KnownBug is a bug of a ZooKeeper recipe from the public record, ported
// as the recipe was when it had the bug (its logic, not this project's),
// with what it takes to find it. Each lives in a file of its own, named
// after its upstream id.
type KnownBug struct {
	// Name selects it in cmd/zkfuzz (-recipe=NAME): its upstream id.
	Name string
	// Title is the upstream report's title, and Recipe the recipe and
	// library it is in.
	Title, Recipe string
	// Mechanism says what goes wrong, in two sentences; Schedule, what
	// the harness must draw for it; Symptom, what a user sees.
	Mechanism, Schedule, Symptom string
	// Fixed says whether and how upstream fixed it.
	Fixed string
	// Detectors are those that find it; Mark is a line only its story
	// tells, so that a campaign can tell it from the port's other bugs.
	Detectors []fuzz.Detector
	Mark      string
	// Target is the port, and Options what its campaign needs to see
	// this bug rather than another one the port also has.
	Target  fuzz.Target
	Options []fuzz.Option
}

// Catalogue returns the known bugs the harness reproduces: ZooKeeper's
// own recipes' and go-zookeeper's, then Curator's, then kazoo's, then
// those of recipes beyond the lock, the election, the read/write lock and
// the semaphore.
func Catalogue() []KnownBug {
	all := []KnownBug{zookeeper2931(), writeLock26(), goZookeeper229()}
	all = append(all, goZookeeperBugs()...)
	all = append(all, curatorBugs()...)
	all = append(all, curatorLatchBugs()...)
	all = append(all, kazooBugs()...)
	all = append(all, kazooBeyondBugs()...)
	return append(all, beyondBugs()...)
}

// Accepts reports whether f is this bug's finding: one of its Detectors',
// with its Mark in the story. fuzz.OnlyFindings(b.Accepts) hunts it alone,
// passing over the port's other bugs, as cmd/zkfuzz does.
func (b KnownBug) Accepts(f *fuzz.Finding) bool {
	return slices.Contains(b.Detectors, f.Detector) && strings.Contains(f.Story, b.Mark)
}

// allFaultsBut lists every fault but keep, for fuzz.WithoutFaults: the
// campaign of a bug that needs those faults alone.
func allFaultsBut(keep ...fuzz.Fault) []fuzz.Fault {
	return slices.DeleteFunc(fuzz.AllFaults(), func(f fuzz.Fault) bool { return slices.Contains(keep, f) })
}
