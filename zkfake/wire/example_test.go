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
