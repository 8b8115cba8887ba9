package recipe_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake"
)

// An Option goes to every constructor as it is: here one ACL and one
// identifier in the nodes serve a Mutex and a Semaphore alike. The
// Semaphore also gets a NodeNameOption, which an RWMutex would refuse (at
// compile time), and a list of options built for one constructor is a
// slice of its option type.
func ExampleOption() {
	srv := zkfake.NewServer()
	defer srv.Close()
	conn, _, err := srv.Connect(10 * time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	acl := recipe.WithACL(zk.WorldACL(zk.PermAll))
	who := recipe.WithNodeData([]byte("worker-7"))

	m := recipe.NewMutex(conn, "/locks/report", acl, who)
	semOpts := []recipe.SemaphoreOption{acl, who, recipe.WithNodeName("lock-")}
	sem := recipe.NewSemaphore(conn, "/leases/render", 2, semOpts...)

	ctx := context.Background()
	if err := m.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	lease, err := sem.Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	ids, err := recipe.Contenders(conn, "/locks/report")
	if err != nil {
		log.Fatal(err)
	}
	held, _, err := conn.Get("/locks/report/" + ids[0])
	if err != nil {
		log.Fatal(err)
	}
	leased, _, err := conn.Get(lease.Node())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the lock's holder:", string(held))
	fmt.Println("the lease's holder:", string(leased))
	if err := lease.Release(); err != nil {
		log.Fatal(err)
	}
	if err := m.Unlock(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// the lock's holder: worker-7
	// the lease's holder: worker-7
}
