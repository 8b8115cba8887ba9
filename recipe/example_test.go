package recipe_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/zksim/zksim/recipe"
	"github.com/zksim/zksim/zkfake"
)

// A holder does its work under the lock, gives the work up when the lock is
// lost, and hands the fencing token to whatever it writes to, so that a
// holder that has been superseded is refused there. With a real ensemble
// conn would come from zk.Connect; here it is the in-memory fake.
func ExampleMutex() {
	srv := zkfake.NewServer()
	defer srv.Close()
	conn, _, err := srv.Connect(10 * time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	m := recipe.NewMutex(conn, "/app/locks/report", recipe.WithNodeData([]byte("worker-1")))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Lock(ctx); err != nil {
		log.Fatal(err)
	}

	work, stopWork := context.WithCancel(ctx)
	go func() {
		select {
		case <-m.Lost(): // session expired or node deleted: stop at once
			stopWork()
		case <-work.Done():
		}
	}()
	fmt.Println("state:", m.State())
	fmt.Println("has a fencing token:", m.Token() > 0)
	stopWork() // the work is done

	if err := m.Unlock(); errors.Is(err, recipe.ErrLockLost) {
		fmt.Println("the lock was lost before the work ended")
	} else if err != nil {
		log.Fatal(err)
	}
	fmt.Println("state:", m.State())
	// Output:
	// state: held
	// has a fencing token: true
	// state: unlocked
}

// TryLock takes the lock only if nobody holds or waits for it.
func ExampleMutex_TryLock() {
	srv := zkfake.NewServer()
	defer srv.Close()
	first, _, _ := srv.Connect(10 * time.Second)
	defer first.Close()
	second, _, _ := srv.Connect(10 * time.Second)
	defer second.Close()

	ctx := context.Background()
	a := recipe.NewMutex(first, "/locks/nightly")
	b := recipe.NewMutex(second, "/locks/nightly")
	ok, err := a.TryLock(ctx)
	fmt.Println("a:", ok, err)
	ok, err = b.TryLock(ctx)
	fmt.Println("b:", ok, err)
	if err := a.Unlock(); err != nil {
		log.Fatal(err)
	}
	ok, err = b.TryLock(ctx)
	fmt.Println("b after a's unlock:", ok, err)
	if err := b.Unlock(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// a: true <nil>
	// b: false <nil>
	// b after a's unlock: true <nil>
}

// Contenders lists who holds and who waits, in queue order, whatever lock
// implementation their nodes come from.
func ExampleContenders() {
	srv := zkfake.NewServer()
	defer srv.Close()
	holder, _, _ := srv.Connect(10 * time.Second)
	defer holder.Close()
	waiter, _, _ := srv.Connect(10 * time.Second)
	defer waiter.Close()

	ctx := context.Background()
	h := recipe.NewMutex(holder, "/locks/db")
	if err := h.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	w := recipe.NewMutex(waiter, "/locks/db")
	done := make(chan error, 1)
	go func() { done <- w.Lock(ctx) }()
	for {
		ids, err := recipe.Contenders(holder, "/locks/db")
		if err != nil {
			log.Fatal(err)
		}
		if len(ids) == 2 {
			fmt.Println("contenders:", len(ids))
			fmt.Println("holder's node ends in", ids[0][len(ids[0])-18:])
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := h.Unlock(); err != nil {
		log.Fatal(err)
	}
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	if err := w.Unlock(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// contenders: 2
	// holder's node ends in __lock__0000000000
}

// Candidates campaign with a value — here the address at which the leader
// serves — and anyone can read who leads. The leader hands its fencing
// token to whatever it writes to, and stops work when Lost closes (or
// pauses while IsLeader is false). With a real ensemble each candidate's
// conn would come from zk.Connect; here they are sessions of the in-memory
// fake.
func ExampleElection() {
	srv := zkfake.NewServer()
	defer srv.Close()
	connA, _, _ := srv.Connect(10 * time.Second)
	defer connA.Close()
	connB, _, _ := srv.Connect(10 * time.Second)
	defer connB.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	a := recipe.NewElection(connA, "/app/leader", []byte("svc-a:8080"))
	if err := a.Campaign(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("a leads:", a.IsLeader())
	leader, err := recipe.CurrentLeader(ctx, connB, "/app/leader")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("the leader serves at %s\n", leader.Value)

	// b lines up behind a, and leads once a resigns.
	b := recipe.NewElection(connB, "/app/leader", []byte("svc-b:8080"))
	elected := make(chan error, 1)
	go func() { elected <- b.Campaign(ctx) }()
	tokenA := a.Token()
	if err := a.Resign(); err != nil {
		log.Fatal(err)
	}
	if err := <-elected; err != nil {
		log.Fatal(err)
	}
	fmt.Println("b leads:", b.IsLeader(), "with a larger token:", b.Token() > tokenA)
	leader, _ = b.Leader(ctx)
	fmt.Printf("the leader serves at %s\n", leader.Value)

	if err := b.Resign(); err != nil {
		log.Fatal(err)
	}
	_, err = recipe.CurrentLeader(ctx, connA, "/app/leader")
	fmt.Println("after b resigned:", err)
	// Output:
	// a leads: true
	// the leader serves at svc-a:8080
	// b leads: true with a larger token: true
	// the leader serves at svc-b:8080
	// after b resigned: recipe: no leader
}

// Observe reports the current leader, then every change of leader, the
// empty seat included (the zero Leader).
func ExampleElection_Observe() {
	srv := zkfake.NewServer()
	defer srv.Close()
	watcher, _, _ := srv.Connect(10 * time.Second)
	defer watcher.Close()
	candidate, _, _ := srv.Connect(10 * time.Second)
	defer candidate.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// An Election that never campaigns only reads.
	observe, stop := context.WithCancel(ctx)
	leaders := recipe.NewElection(watcher, "/app/leader", nil).Observe(observe)
	show := func() {
		if l := <-leaders; l.Node == "" {
			fmt.Println("no leader")
		} else {
			fmt.Printf("leader %s\n", l.Value)
		}
	}
	show()
	for _, name := range []string{"svc-a", "svc-b"} {
		e := recipe.NewElection(candidate, "/app/leader", []byte(name))
		if err := e.Campaign(ctx); err != nil {
			log.Fatal(err)
		}
		show()
		if err := e.Resign(); err != nil {
			log.Fatal(err)
		}
		show()
	}
	stop()
	for range leaders {
		// drained: the channel closes once observe is done
	}
	// Output:
	// no leader
	// leader svc-a
	// no leader
	// leader svc-b
	// no leader
}

// Readers share the lock and a writer waits for them. A reader that comes
// while a writer waits queues behind it, though readers hold, so a stream
// of readers cannot starve writers. Each side's Token is its node's czxid:
// a writer's is above the tokens of the readers before it. With a real
// ensemble each conn would come from zk.Connect; here they are sessions of
// the in-memory fake.
func ExampleRWMutex() {
	srv := zkfake.NewServer()
	defer srv.Close()
	session := func() *zkfake.Conn {
		conn, _, err := srv.Connect(10 * time.Second)
		if err != nil {
			log.Fatal(err)
		}
		return conn
	}
	connA, connB, connW, connL := session(), session(), session(), session()
	defer connA.Close()
	defer connB.Close()
	defer connW.Close()
	defer connL.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const path = "/app/locks/config"
	a := recipe.NewRWMutex(connA, path)
	b := recipe.NewRWMutex(connB, path)
	writer := recipe.NewRWMutex(connW, path)
	late := recipe.NewRWMutex(connL, path)
	for _, reader := range []*recipe.RWMutex{a, b} {
		if err := reader.RLock(ctx); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("a and b read:", a.ReadLock().State(), b.ReadLock().State())
	readToken := max(a.ReadLock().Token(), b.ReadLock().Token())

	wrote := make(chan error, 1)
	go func() { wrote <- writer.Lock(ctx) }()
	for {
		ids, err := recipe.Contenders(connA, path)
		if err != nil {
			log.Fatal(err)
		}
		if len(ids) == 3 {
			break // the writer waits
		}
		time.Sleep(time.Millisecond)
	}
	ok, err := late.TryRLock(ctx)
	fmt.Println("a reader gets in while the writer waits:", ok, err)

	for _, reader := range []*recipe.RWMutex{a, b} {
		if err := reader.RUnlock(); err != nil {
			log.Fatal(err)
		}
	}
	if err := <-wrote; err != nil {
		log.Fatal(err)
	}
	fmt.Println("the writer:", writer.WriteLock().State(), "with a larger token:", writer.WriteLock().Token() > readToken)
	if err := writer.Unlock(); err != nil {
		log.Fatal(err)
	}
	ok, err = late.TryRLock(ctx)
	fmt.Println("once the writer is done:", ok, err)
	if err := late.RUnlock(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// a and b read: held held
	// a reader gets in while the writer waits: false <nil>
	// the writer: held with a larger token: true
	// once the writer is done: true <nil>
}

// WithRWNodeNames gives the nodes Curator's names, so that Curator's
// InterProcessReadWriteLock on the same path takes part in the queue.
func ExampleWithRWNodeNames() {
	srv := zkfake.NewServer()
	defer srv.Close()
	conn, _, err := srv.Connect(10 * time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	rw := recipe.NewRWMutex(conn, "/locks/catalog", recipe.WithRWNodeNames("__READ__", "__WRIT__"))
	if err := rw.RLock(context.Background()); err != nil {
		log.Fatal(err)
	}
	ids, err := recipe.Contenders(conn, "/locks/catalog")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the reader's node ends in", ids[0][len(ids[0])-18:])
	if err := rw.RUnlock(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// the reader's node ends in __READ__0000000000
}
