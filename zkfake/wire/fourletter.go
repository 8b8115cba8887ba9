package wire

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// version is what the four-letter words report, in the real server's format
// (ZooKeeper 3.8.0 as Debian builds it, with the fake named in the build tag).
const version = "3.8.0-zkfake, built on 1970-01-01 00:00 UTC"

// fourLetterWords are the admin commands ZooKeeper 3.8 knows
// (FourLetterCommands): a connection whose first four bytes are one of
// them gets that command's answer, or, off the whitelist, a line saying it
// was not executed. Any other four bytes are read as a frame length.
var fourLetterWords = []string{
	"conf", "cons", "crst", "dirs", "dump", "envi", "gtmk", "hash", "isro",
	"mntr", "ruok", "srst", "srvr", "stat", "stmk", "wchc", "wchp", "wchs",
}

// defaultTraceMask is the trace mask gtmk reports until stmk sets another:
// ZooTrace's default.
const defaultTraceMask = 306

// WithFourLetterWords sets the whitelist of four-letter words, as
// ZooKeeper's 4lw.commands.whitelist does ("*" for all of them); srvr is
// always on it, as on the server, so WithFourLetterWords() allows srvr
// alone. A known word off the list is answered "<word> is not executed
// because it is not in the whitelist." and the connection closed.
// ZooKeeper 3.8's default is srvr alone; the fake's, without this option,
// is every word, as the ensemble of make test-ensemble runs, since a test
// server is asked for them (kazoo's server_version asks envi).
func WithFourLetterWords(words ...string) Option {
	return func(c *config) { c.fourLetterWords = append([]string{"srvr"}, words...) }
}

func isFourLetterWord(w string) bool { return slices.Contains(fourLetterWords, w) }

// whitelisted reports whether the listener answers word.
func (l *Listener) whitelisted(word string) bool {
	return l.cfg.fourLetterWords == nil || slices.Contains(l.cfg.fourLetterWords, "*") || slices.Contains(l.cfg.fourLetterWords, word)
}

// fourLetterWord answers an admin command in the real server's words; the
// server then closes the connection.
func (l *Listener) fourLetterWord(word string, self *clientConn) string {
	if !l.whitelisted(word) {
		return word + " is not executed because it is not in the whitelist.\n"
	}
	switch word {
	case "ruok":
		return "imok"
	case "isro":
		return "rw"
	case "mntr":
		return l.mntr()
	case "srvr", "stat":
		return l.srvr(word == "stat")
	case "cons":
		return l.cons()
	case "crst":
		for _, c := range l.clients() {
			c.resetStats()
		}
		return "Connection stats reset.\n"
	case "srst":
		l.received.Store(0)
		l.sent.Store(0)
		return "Server stats reset.\n"
	case "envi":
		return envi()
	case "conf":
		return l.conf()
	case "dirs":
		return "datadir_size: 0\nlogdir_size: 0\n"
	case "dump":
		return l.dump()
	case "wchs", "wchc", "wchp":
		return l.watches(word)
	case "gtmk":
		return fmt.Sprint(l.traceMask.Load())
	case "stmk":
		// The mask follows the word as 8 bytes, big-endian.
		var mask [8]byte
		self.nc.SetReadDeadline(time.Now().Add(connectTimeout))
		if _, err := io.ReadFull(self.nc, mask[:]); err != nil {
			return ""
		}
		l.traceMask.Store(int64(binary.BigEndian.Uint64(mask[:])))
		return fmt.Sprint(l.traceMask.Load())
	}
	// hash: the fake keeps no digest log.
	return ""
}

// srvr answers srvr, and stat with the list of clients.
func (l *Listener) srvr(withClients bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Zookeeper version: %s\n", version)
	if withClients {
		b.WriteString("Clients:\n")
		for _, c := range l.clients() {
			fmt.Fprintf(&b, " /%s[%d](queued=0,recved=%d,sent=%d)\n", c.nc.RemoteAddr(), c.interest(), c.received.Load(), c.sent.Load())
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

// cons lists the connections with their statistics, as the real server:
// the short form for a connection without a session, the long one with
// its session, last operation, cxid, zxid and latencies (always 0 here).
func (l *Listener) cons() string {
	var b strings.Builder
	for _, c := range l.clients() {
		fmt.Fprintf(&b, " /%s[%d](queued=0,recved=%d,sent=%d", c.nc.RemoteAddr(), c.interest(), c.received.Load(), c.sent.Load())
		c.mu.Lock()
		s, st := c.session, c.stats
		c.mu.Unlock()
		if s != nil {
			var lresp int64
			if !st.lastResp.IsZero() {
				lresp = st.lastResp.Sub(l.started).Milliseconds()
			}
			fmt.Fprintf(&b, ",sid=0x%x,lop=%s,est=%d,to=%d,lcxid=0x%x,lzxid=0x%x,lresp=%d,llat=0,minlat=0,avglat=0,maxlat=0",
				s.id, st.lastOp, st.established.UnixMilli(), s.timeout.Milliseconds(), uint32(st.lastCxid), uint64(st.lastZxid), lresp)
		}
		b.WriteString(")\n")
	}
	b.WriteString("\n")
	return b.String()
}

// envi describes the server's environment under the real server's keys;
// the Java ones name the Go runtime instead.
func envi() string {
	host, _ := os.Hostname()
	wd, _ := os.Getwd()
	home, _ := os.UserHomeDir()
	user := os.Getenv("USER")
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	var b strings.Builder
	b.WriteString("Environment:\n")
	for _, kv := range [][2]string{
		{"zookeeper.version", version},
		{"host.name", host},
		{"java.version", runtime.Version()},
		{"java.vendor", "zkfake (Go)"},
		{"java.home", runtime.GOROOT()},
		{"java.class.path", "<NA>"},
		{"java.library.path", "<NA>"},
		{"java.io.tmpdir", os.TempDir()},
		{"java.compiler", "<NA>"},
		{"os.name", osName()},
		{"os.arch", runtime.GOARCH},
		{"os.version", "<NA>"},
		{"user.name", user},
		{"user.home", home},
		{"user.dir", wd},
		{"os.memory.free", fmt.Sprintf("%dMB", (m.HeapSys-m.HeapAlloc)>>20)},
		{"os.memory.max", fmt.Sprintf("%dMB", m.Sys>>20)},
		{"os.memory.total", fmt.Sprintf("%dMB", m.HeapSys>>20)},
	} {
		fmt.Fprintf(&b, "%s=%s\n", kv[0], kv[1])
	}
	return b.String()
}

// osName names the system as Java's os.name does.
func osName() string {
	switch runtime.GOOS {
	case "linux":
		return "Linux"
	case "darwin":
		return "Mac OS X"
	case "windows":
		return "Windows"
	}
	return runtime.GOOS
}

// conf is the standalone server's configuration, under the real keys.
func (l *Listener) conf() string {
	port := "-1"
	if _, p, err := net.SplitHostPort(l.Addr().String()); err == nil {
		port = p
	}
	tick := l.srv.TickTime().Milliseconds()
	var b strings.Builder
	for _, kv := range [][2]any{
		{"clientPort", port},
		{"secureClientPort", -1},
		{"dataDir", "(in memory)"},
		{"dataDirSize", 0},
		{"dataLogDir", "(in memory)"},
		{"dataLogSize", 0},
		{"tickTime", tick},
		{"maxClientCnxns", max(l.cfg.maxConnections, 0)},
		{"minSessionTimeout", 2 * tick},
		{"maxSessionTimeout", 20 * tick},
		{"clientPortListenBacklog", -1},
		{"serverId", 0},
	} {
		fmt.Fprintf(&b, "%s=%v\n", kv[0], kv[1])
	}
	return b.String()
}

// dump lists the sessions by when they expire, each session's ephemeral
// nodes, and the connections, as a standalone server's dump does.
func (l *Listener) dump() string {
	sessions := l.liveSessions()
	tick := l.srv.TickTime()
	buckets := map[time.Time][]int64{}
	for _, s := range sessions {
		s.mu.Lock()
		at := s.deadline
		s.mu.Unlock()
		// The real server rounds expiries up to its next tick.
		at = at.Add(tick - 1).Truncate(tick)
		buckets[at] = append(buckets[at], s.id)
	}
	times := make([]time.Time, 0, len(buckets))
	for at := range buckets {
		times = append(times, at)
	}
	slices.SortFunc(times, time.Time.Compare)
	var b strings.Builder
	b.WriteString("SessionTracker dump:\n")
	fmt.Fprintf(&b, "Session Sets (%d)/(%d):\n", len(times), len(sessions))
	for _, at := range times {
		fmt.Fprintf(&b, "%d expire at %s:\n", len(buckets[at]), javaDate(at))
		for _, id := range buckets[at] {
			fmt.Fprintf(&b, "\t0x%x\n", id)
		}
	}
	b.WriteString("ephemeral nodes dump:\n")
	var withEphemerals []int64
	for _, s := range sessions {
		if len(l.srv.Ephemerals(s.id)) > 0 {
			withEphemerals = append(withEphemerals, s.id)
		}
	}
	fmt.Fprintf(&b, "Sessions with Ephemerals (%d):\n", len(withEphemerals))
	for _, id := range withEphemerals {
		fmt.Fprintf(&b, "0x%x:\n", id)
		for _, p := range l.srv.Ephemerals(id) {
			fmt.Fprintf(&b, "\t%s\n", p)
		}
	}
	clients := l.clients()
	b.WriteString("Connections dump:\n")
	fmt.Fprintf(&b, "Connections Sets (1)/(%d):\n", len(clients))
	fmt.Fprintf(&b, "%d expire at %s:\n", len(clients), javaDate(time.Now().Add(connectTimeout).Truncate(time.Second)))
	for _, c := range clients {
		var id int64
		c.mu.Lock()
		if c.session != nil {
			id = c.session.id
		}
		c.mu.Unlock()
		fmt.Fprintf(&b, "\tip: /%s sessionId: 0x%x\n", c.nc.RemoteAddr(), id)
	}
	return b.String()
}

// javaDate formats t as java.util.Date's toString does.
func javaDate(t time.Time) string { return t.UTC().Format("Mon Jan 02 15:04:05 MST 2006") }

// watches answers wchs, wchc and wchp. As on the real server they show the
// data watches (getData and exists) only: child watches are counted by
// mntr's zk_watch_count but listed by none of them.
func (l *Listener) watches(word string) string {
	bySession := map[int64][]string{}
	byPath := map[string][]int64{}
	total := 0
	for _, s := range l.liveSessions() {
		s.mu.Lock()
		for k := range s.registered {
			if k.kind != watchChild { // the data table's, as the server counts
				if !slices.Contains(bySession[s.id], k.path) {
					bySession[s.id] = append(bySession[s.id], k.path)
					byPath[k.path] = append(byPath[k.path], s.id)
					total++
				}
			}
		}
		s.mu.Unlock()
	}
	var b strings.Builder
	switch word {
	case "wchs":
		fmt.Fprintf(&b, "%d connections watching %d paths\nTotal watches:%d\n", len(bySession), len(byPath), total)
	case "wchc":
		for _, id := range slices.Sorted(maps.Keys(bySession)) {
			fmt.Fprintf(&b, "0x%x\n", id)
			for _, p := range slices.Sorted(slices.Values(bySession[id])) {
				fmt.Fprintf(&b, "\t%s\n", p)
			}
		}
		b.WriteString("\n")
	case "wchp":
		for _, p := range slices.Sorted(maps.Keys(byPath)) {
			fmt.Fprintf(&b, "%s\n", p)
			for _, id := range slices.Sorted(slices.Values(byPath[p])) {
				fmt.Fprintf(&b, "\t0x%x\n", id)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// liveSessions returns the listener's sessions by id.
func (l *Listener) liveSessions() []*session {
	l.mu.Lock()
	out := make([]*session, 0, len(l.sessions))
	for _, s := range l.sessions {
		out = append(out, s)
	}
	l.mu.Unlock()
	slices.SortFunc(out, func(a, b *session) int { return cmp.Compare(a.id, b.id) })
	return out
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

// connStats is what cons shows of a connection besides its packet counts.
type connStats struct {
	established time.Time // when it got its session
	lastOp      string    // the last request answered, as ZooKeeper abbreviates it
	lastCxid    int32
	lastZxid    int64
	lastResp    time.Time
}

// answered records a reply for cons.
func (cc *clientConn) answered(op int32, cxid int32, zxid int64) {
	cc.mu.Lock()
	cc.stats.lastOp, cc.stats.lastCxid, cc.stats.lastZxid, cc.stats.lastResp = opAbbreviation(op), cxid, zxid, time.Now()
	cc.mu.Unlock()
}

// resetStats forgets the connection's statistics (crst), as the real
// server resets them: counts to 0, last operation "NA", cxid and zxid -1.
func (cc *clientConn) resetStats() {
	cc.received.Store(0)
	cc.sent.Store(0)
	cc.mu.Lock()
	cc.stats = connStats{established: cc.stats.established, lastOp: "NA", lastCxid: -1, lastZxid: -1}
	cc.mu.Unlock()
}

// interest is what the bracket after a client's address shows: its
// interest ops, 1 (read) once it has a session, 0 before.
func (cc *clientConn) interest() int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.session != nil {
		return 1
	}
	return 0
}
