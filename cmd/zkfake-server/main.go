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
//
// With -jaas FILE it authenticates SASL DIGEST-MD5 logins as a ZooKeeper
// 3.8 server given the same file with -Djava.security.auth.login.config
// and authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider
// does: the users are the Server section's DigestLoginModule options
// user_NAME="PASSWORD" (testdata/sasl/jaas.conf has kazoo's), a login
// gives its session the identity sasl:NAME, "sasl" ACLs are served, and
// bad credentials are answered AUTHFAILED before the connection closes
// (wire.WithSASLUsers, zkfake.WithSASLScheme). kazoo's own SASL tests run
// against it:
//
//	go run ./cmd/zkfake-server -addr 127.0.0.1:23181 -jaas testdata/sasl/jaas.conf &
//	ZK_SERVERS=127.0.0.1:23181 python3 testdata/kazoo/run_suite.py test_sasl.py
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
	zooCfg      string
	jaas        string
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
	flag.StringVar(&o.jaas, "jaas", "", "JAAS file whose Server section's DigestLoginModule users (user_NAME=\"PASSWORD\") may log in with SASL DIGEST-MD5, as -Djava.security.auth.login.config gives ZooKeeper; also serves the sasl ACL scheme")
	flag.StringVar(&o.zooCfg, "zoo-cfg", "", "zoo.cfg whose server lines /zookeeper/config holds (zkfake.WithQuorum), one member per participant, in place of -members; its client addresses, if any, must be the one served")
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
	wireOpts := []wire.Option{wire.WithMaxConnections(o.maxConns)}
	if o.jaas != "" {
		conf, err := os.ReadFile(o.jaas)
		if err != nil {
			return fmt.Errorf("-jaas: %w", err)
		}
		users, err := wire.JAASUsers(conf)
		if err != nil {
			return fmt.Errorf("-jaas %s: %w", o.jaas, err)
		}
		opts = append(opts, zkfake.WithSASLScheme())
		wireOpts = append(wireOpts, wire.WithSASLUsers(users))
	}
	if !o.eventLog {
		opts = append(opts, zkfake.WithoutEventLog())
	}
	if o.manualClock {
		opts = append(opts, zkfake.WithManualClock(time.Now()))
	}
	quorum, err := configOptions(&o)
	if err != nil {
		return err
	}
	opts = append(opts, quorum...)
	srv := zkfake.NewServer(opts...)
	defer srv.Close()
	l, err := wire.Listen(srv, o.addr, wireOpts...)
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

// configOptions returns the options that give a modelled ensemble's
// /zookeeper/config its servers: -zoo-cfg's, or WithEnsemble's own,
// which list the fake's address as every member's client address.
// Curator's EnsembleTracker reconnects to the client addresses it reads
// there, so they must be where the fake serves: a port 0 is chosen here,
// before the server is made, and o.addr set to it.
func configOptions(o *options) ([]zkfake.Option, error) {
	if o.members <= 1 && o.zooCfg == "" {
		return nil, nil
	}
	if _, port, _ := net.SplitHostPort(o.addr); port == "0" {
		ln, err := net.Listen("tcp", o.addr)
		if err != nil {
			return nil, err
		}
		o.addr = ln.Addr().String()
		ln.Close()
	}
	opts := []zkfake.Option{zkfake.WithAddr(o.addr)}
	if o.zooCfg == "" {
		return opts, nil
	}
	text, err := os.ReadFile(o.zooCfg)
	if err != nil {
		return nil, fmt.Errorf("-zoo-cfg: %w", err)
	}
	servers, err := zkfake.ParseZooCfg(string(text))
	if err != nil {
		return nil, fmt.Errorf("-zoo-cfg %s: %w", o.zooCfg, err)
	}
	for _, q := range servers {
		if q.ClientAddr != "" && q.ClientAddr != o.addr {
			return nil, fmt.Errorf("-zoo-cfg %s: server.%d names the client address %s, where nothing serves (the fake serves %s)", o.zooCfg, q.ID, q.ClientAddr, o.addr)
		}
	}
	return append(opts, zkfake.WithQuorum(servers)), nil
}
