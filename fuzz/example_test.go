package fuzz_test

import (
	"context"
	"fmt"
	"log"
	"testing"

	"github.com/zksim/zksim/fuzz"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake/zktest"
)

// A test of a lock of your own: any type with Lock(ctx) and Unlock(), made
// on the zktest.Conn each simulated client passes it. On a finding the test
// fails with the shrunk story, and rapid saves a fail file under
// testdata/rapid that every later `go test` replays first.
func ExampleLock() {
	testMyLock := func(t *testing.T) {
		fuzz.Check(t, fuzz.Lock(func(conn zktest.Conn, path string) fuzz.Locker {
			return recipe.NewMutex(conn, path, recipe.WithNodeName("lock-"))
		}), fuzz.WithClients(3))
	}
	_ = testMyLock // func TestMyLock(t *testing.T) { testMyLock(t) }
}

// A campaign from a program, as cmd/zkfuzz runs it.
func ExampleRun() {
	report, err := fuzz.Run(context.Background(), fuzz.Lock(fuzz.RecipeMutex), fuzz.WithCases(500), fuzz.WithSeed(7))
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range report.Findings {
		fmt.Println(f)
	}
	fmt.Printf("%d cases, %d findings\n", report.Cases, len(report.Findings))
}
