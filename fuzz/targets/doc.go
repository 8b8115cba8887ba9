// Package targets holds the fuzz harness's built-in targets: the
// project's leader election, read/write lock and semaphore described to
// the harness (Election, RWMutex, Semaphore, each taking any
// implementation of its interface, the recipe package's or yours), and
// the catalogue of mutants, deliberately broken recipes that every
// campaign must find (Mutants).
//
// It is written against package fuzz's exported API only, exactly as a
// user describes a recipe of their own with fuzz.Recipe: whatever a
// built-in target needs of the harness, a user's target has too. The one
// target that stays in the engine is fuzz.Lock, the loop for any Locker,
// whose books (the fenced critical section, the queue's order for the herd
// rule, the holds in doubt) the engine keeps itself.
//
//	fuzz.Check(t, targets.Election(targets.RecipeElection))
//
// The mutants share one small lock, QueueLock, written the way people
// write the ZooKeeper lock recipe, each with one classic mistake; the
// election and read/write lock mutants are built on it or on the recipe
// package's own recipes. Mutant.Detector names the detector that must
// find each; cmd/zkfuzz runs any of them by name (-recipe=NAME).
package targets
