package recipe_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake"
)

// At most two workers run an import at once, whichever processes they run
// in. A worker holds its lease for the length of its work, stops if Lost
// closes, and releases it when done; a third waits for a lease, or, with
// TryAcquire, goes on without one. With a real ensemble each worker's conn
// would come from zk.Connect; here they are sessions of the in-memory fake.
func ExampleSemaphore() {
	srv := zkfake.NewServer()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var conns []*zkfake.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	worker := func(name string) *recipe.Semaphore {
		conn, _, err := srv.Connect(10 * time.Second)
		if err != nil {
			log.Fatal(err)
		}
		conns = append(conns, conn)
		return recipe.NewSemaphore(conn, "/app/imports", 2, recipe.WithNodeData([]byte(name)))
	}
	a, b, c := worker("a"), worker("b"), worker("c")

	leaseA, err := a.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	leaseB, err := b.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	_, ok, err := c.TryAcquire(ctx)
	fmt.Println("c gets a third lease at once:", ok, err)

	got := make(chan *recipe.Lease)
	go func() {
		l, err := c.Acquire(ctx) // waits for a or b to finish
		if err != nil {
			log.Fatal(err)
		}
		got <- l
	}()
	select {
	case <-leaseA.Lost(): // session expired or node deleted: stop at once
	default:
		fmt.Println("a works with token above 0:", leaseA.Token() > 0)
	}
	if err := leaseA.Release(); err != nil {
		log.Fatal(err)
	}
	leaseC := <-got
	fmt.Println("c works once a is done:", leaseC.State())

	for _, l := range []*recipe.Lease{leaseB, leaseC} {
		if err := l.Release(); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// c gets a third lease at once: false <nil>
	// a works with token above 0: true
	// c works once a is done: held
}
