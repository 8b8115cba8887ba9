// Command zkfake-server serves an in-memory ZooKeeper (zkfake) over
// ZooKeeper's client protocol, for projects in other languages that want to
// test against the fake with their usual client:
//
//	go run ./cmd/zkfake-server -addr 127.0.0.1:2181
//
// It prints the address it serves on its first line of output and runs until
// interrupted. Only loopback addresses are accepted.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/wire"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:2181", "loopback address to listen on (port 0 picks a free port)")
	tick := flag.Duration("tick", 2*time.Second, "tickTime: session timeouts are clamped to 2..20 ticks")
	maxConns := flag.Int("max-connections", 60, "maximum open client connections (maxClientCnxns)")
	flag.Parse()
	if err := run(*addr, *tick, *maxConns, os.Stdout, interrupted()); err != nil {
		fmt.Fprintln(os.Stderr, "zkfake-server:", err)
		os.Exit(1)
	}
}

func interrupted() <-chan os.Signal {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	return ch
}

// run serves a fresh fake on addr until stop delivers, printing the address
// served to out.
func run(addr string, tick time.Duration, maxConns int, out *os.File, stop <-chan os.Signal) error {
	if err := checkLoopback(addr); err != nil {
		return err
	}
	srv := zkfake.NewServer(zkfake.WithTickTime(tick), zkfake.WithoutEventLog())
	defer srv.Close()
	l, err := wire.Listen(srv, addr, wire.WithMaxConnections(maxConns))
	if err != nil {
		return err
	}
	defer l.Close()
	fmt.Fprintln(out, l.Addr())
	<-stop
	return nil
}

// checkLoopback refuses an address that is not a loopback IP: the fake is a
// test tool and must not be reachable from other machines.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("address %q is not a loopback IP (use 127.0.0.1)", addr)
	}
	return nil
}
