package wire

import (
	"fmt"
	"strings"
	"time"
)

// version is what the four-letter words report, in the real server's format
// (ZooKeeper 3.8.0 as Debian builds it, with the fake named in the build tag).
const version = "3.8.0-zkfake, built on 1970-01-01 00:00 UTC"

// isFourLetterWord tells whether a connection's first four bytes are one of
// the admin commands served: ruok, srvr, stat and mntr. Any other four bytes
// are read as a frame length, as the real server reads a word that is not
// on its whitelist.
func isFourLetterWord(w string) bool {
	switch w {
	case "ruok", "srvr", "stat", "mntr":
		return true
	}
	return false
}

// fourLetterWord answers an admin command in the real server's words; the
// server then closes the connection.
func (l *Listener) fourLetterWord(word string, self *clientConn) string {
	switch word {
	case "ruok":
		return "imok"
	case "mntr":
		return l.mntr()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Zookeeper version: %s\n", version)
	if word == "stat" {
		b.WriteString("Clients:\n")
		for _, c := range l.clients() {
			// The bracket holds the connection's interest ops: 1 (read)
			// once it has a session, 0 before, as the real server shows.
			interest := 0
			c.mu.Lock()
			if c.session != nil {
				interest = 1
			}
			c.mu.Unlock()
			fmt.Fprintf(&b, " /%s[%d](queued=0,recved=%d,sent=%d)\n", c.nc.RemoteAddr(), interest, c.received.Load(), c.sent.Load())
		}
		b.WriteString("\n")
	}
	l.mu.Lock()
	conns := len(l.conns)
	l.mu.Unlock()
	fmt.Fprintf(&b, "Latency min/avg/max: 0/0.0/0\n")
	fmt.Fprintf(&b, "Received: %d\n", l.received.Load())
	fmt.Fprintf(&b, "Sent: %d\n", l.sent.Load())
	fmt.Fprintf(&b, "Connections: %d\n", conns)
	fmt.Fprintf(&b, "Outstanding: 0\n")
	fmt.Fprintf(&b, "Zxid: 0x%x\n", l.srv.Zxid())
	fmt.Fprintf(&b, "Mode: standalone\n")
	fmt.Fprintf(&b, "Node count: %d\n", l.srv.NodeCount())
	return b.String()
}

// clients returns the open connections.
func (l *Listener) clients() []*clientConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*clientConn, 0, len(l.conns))
	for c := range l.conns {
		out = append(out, c)
	}
	return out
}

// mntr answers the monitoring command: the real server's tab-separated
// keys, those the fake can give a true value for.
func (l *Listener) mntr() string {
	l.mu.Lock()
	conns := len(l.conns)
	l.mu.Unlock()
	sessions := l.srv.Sessions()
	ephemerals := 0
	for _, id := range sessions {
		ephemerals += len(l.srv.Ephemerals(id))
	}
	var b strings.Builder
	line := func(k string, v any) { fmt.Fprintf(&b, "zk_%s\t%v\n", k, v) }
	line("version", version)
	line("server_state", "standalone")
	line("ephemerals_count", ephemerals)
	line("num_alive_connections", conns)
	line("avg_latency", "0.0")
	line("outstanding_requests", 0)
	line("znode_count", l.srv.NodeCount())
	line("global_sessions", len(sessions))
	line("watch_count", l.srv.TotalWatches())
	line("packets_sent", l.sent.Load())
	line("packets_received", l.received.Load())
	line("min_latency", 0)
	line("max_latency", 0)
	line("uptime", time.Since(l.started).Milliseconds())
	return b.String()
}
