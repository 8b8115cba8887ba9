package wire_test

import (
	"fmt"
	"io"
	"log"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/wire"
)

// Serve a fake on a free loopback port and use it with go-zookeeper's own
// client, as code in any language would with its ZooKeeper client.
func ExampleListen() {
	srv := zkfake.NewServer()
	defer srv.Close()
	l, err := wire.Listen(srv, "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	conn, _, err := zk.Connect([]string{l.Addr().String()}, 10*time.Second,
		zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Create("/greeting", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		log.Fatal(err)
	}
	data, stat, err := conn.Get("/greeting")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s (version %d)\n", data, stat.Version)
	_, err = conn.Create("/greeting", nil, 0, zk.WorldACL(zk.PermAll))
	fmt.Println(err)
	// Output:
	// hello (version 0)
	// zk: node already exists
}

// Test code that needs a *zk.Conn itself — here go-zookeeper's own zk.Lock
// — against the fake: the real client reaches it over in-memory pipes.
// When the holder's session expires (srv.Expire, a fault no real server
// gives on demand), its lock node goes and the waiter gets the lock.
func ExampleServePipe() {
	srv := zkfake.NewServer()
	defer srv.Close()
	pipe := wire.ServePipe(srv)
	defer pipe.Close()

	connect := func() *zk.Conn {
		conn, events, err := pipe.Connect(10 * time.Second)
		if err != nil {
			log.Fatal(err)
		}
		for ev := range events {
			if ev.State == zk.StateHasSession {
				return conn
			}
		}
		log.Fatal("no session")
		return nil
	}
	alice, bob := connect(), connect()
	defer alice.Close()
	defer bob.Close()

	aliceLock := zk.NewLock(alice, "/orders", zk.WorldACL(zk.PermAll))
	if err := aliceLock.Lock(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("alice holds the lock")

	bobHolds := make(chan error)
	go func() { bobHolds <- zk.NewLock(bob, "/orders", zk.WorldACL(zk.PermAll)).Lock() }()
	// Bob queues behind alice: his node is the second under /orders.
	for {
		if children, _, _ := alice.Children("/orders"); len(children) == 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	srv.Expire(alice.SessionID())
	if err := <-bobHolds; err != nil {
		log.Fatal(err)
	}
	fmt.Println("alice's session expired; bob holds the lock")
	// Output:
	// alice holds the lock
	// alice's session expired; bob holds the lock
}
