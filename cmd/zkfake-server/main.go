// Command zkfake-server serves an in-memory ZooKeeper (zkfake) over
// ZooKeeper's client protocol, for projects in other languages that want to
// test against the fake with their usual client:
//
//	go run ./cmd/zkfake-server -addr 127.0.0.1:2181 -admin 127.0.0.1:8181
//
// It prints the address it serves on its first line of output and, with
// -admin, "admin http://<address>" on the second, and runs until
// interrupted. The admin address serves wire.Listener.Admin: JSON over HTTP
// to list sessions, expire one, drop or partition its connection, lose a
// reply, stop a member, move a manual clock, read the tree and the event
// log, and reset. Only loopback addresses are accepted.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/wire"
)

// options are the command's flags.
type options struct {
	addr, admin string
	tick        time.Duration
	maxConns    int
	members     int
	manualClock bool
	eventLog    bool
}

func main() {
	var o options
	flag.StringVar(&o.addr, "addr", "127.0.0.1:2181", "loopback address to listen on (port 0 picks a free port)")
	flag.StringVar(&o.admin, "admin", "", "loopback address for the admin HTTP interface (none if empty; port 0 picks a free port)")
	flag.DurationVar(&o.tick, "tick", 2*time.Second, "tickTime: session timeouts are clamped to 2..20 ticks")
	flag.IntVar(&o.maxConns, "max-connections", 60, "maximum open client connections (maxClientCnxns)")
	flag.IntVar(&o.members, "members", 1, "members of the modelled ensemble (zkfake.WithEnsemble), for the admin's member stop and start")
	flag.BoolVar(&o.manualClock, "manual-clock", false, "time moves only when the admin says (POST /clock/advance)")
	flag.BoolVar(&o.eventLog, "event-log", false, "keep the event log for the admin's GET /log (it grows without bound)")
	flag.Parse()
	if err := run(o, os.Stdout, interrupted()); err != nil {
		fmt.Fprintln(os.Stderr, "zkfake-server:", err)
		os.Exit(1)
	}
}

func interrupted() <-chan os.Signal {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	return ch
}

// run serves a fresh fake on o.addr (and its admin interface on o.admin)
// until stop delivers, printing the addresses served to out.
func run(o options, out *os.File, stop <-chan os.Signal) error {
	if err := checkLoopback(o.addr); err != nil {
		return err
	}
	if o.admin != "" {
		if err := checkLoopback(o.admin); err != nil {
			return fmt.Errorf("-admin: %w", err)
		}
	}
	opts := []zkfake.Option{zkfake.WithTickTime(o.tick), zkfake.WithEnsemble(o.members)}
	if !o.eventLog {
		opts = append(opts, zkfake.WithoutEventLog())
	}
	if o.manualClock {
		opts = append(opts, zkfake.WithManualClock(time.Now()))
	}
	srv := zkfake.NewServer(opts...)
	defer srv.Close()
	l, err := wire.Listen(srv, o.addr, wire.WithMaxConnections(o.maxConns))
	if err != nil {
		return err
	}
	defer l.Close()
	fmt.Fprintln(out, l.Addr())
	if o.admin != "" {
		aln, err := net.Listen("tcp", o.admin)
		if err != nil {
			return err
		}
		admin := &http.Server{Handler: l.Admin()}
		go func() {
			if err := admin.Serve(aln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				fmt.Fprintln(os.Stderr, "zkfake-server: admin:", err)
			}
		}()
		defer admin.Close()
		fmt.Fprintf(out, "admin http://%s\n", aln.Addr())
	}
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
