package targets

import "github.com/zksim/zksim/fuzz"

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

// Catalogue returns the known bugs the harness reproduces.
func Catalogue() []KnownBug {
	return []KnownBug{zookeeper2931(), goZookeeper229()}
}
