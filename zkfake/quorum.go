package zkfake

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// An ensemble keeps its dynamic configuration in /zookeeper/config: every
// member, on loading its database, sets the node's data to the text of its
// QuorumVerifier (ZKDatabase.initConfigInZKDatabase), which QuorumMaj
// renders as one line per server, "server.ID=" and QuorumServer.toString,
// each ending in "\n", then "version=" and the configuration's version in
// hex with no newline after it. The setData it uses passes version -1, the
// configuration's version as the zxid and the member's wall clock, so the
// node reads Version -1, Mzxid the configuration's version, Mtime the
// moment the member loaded it, and Czxid, Ctime and Pzxid 0. A standalone
// server never sets it: it keeps the empty data, Version 0 and Mtime 0 that
// DataTree.addConfigNode gives it. Both have the ACL world:anyone READ and
// Aversion -1 (addConfigNode's setACL with version -1).
//
// The fake models an ensemble started from a static zoo.cfg with
// reconfigEnabled=false, ZooKeeper 3.8's default: its configuration
// keeps version 0 forever. (With reconfigEnabled=true the first leader
// bumps it to its NEWLEADER zxid, Leader.lead, and a reconfig rewrites
// it; the fake does neither.)

// configPath is ZooDefs.CONFIG_NODE.
const configPath = "/zookeeper/config"

// quorumVersion is the version of a static configuration: 0, which the
// node also carries as its Mzxid.
const quorumVersion = 0

// QuorumServer is one server of an ensemble's configuration, as a zoo.cfg
// line server.ID=HOST:QUORUMPORT:ELECTIONPORT[:TYPE][;CLIENT] gives it.
type QuorumServer struct {
	ID           int64
	Host         string // as written, a name or an IP literal
	QuorumPort   int    // the port followers reach the leader on
	ElectionPort int    // the port of leader election
	Observer     bool   // TYPE "observer"; otherwise a participant
	// ClientAddr is the client address the line names after ";", as
	// host:port ("0.0.0.0:port" when it names only a port), or "" when it
	// names none. A static zoo.cfg usually names none: its clientPort key
	// tells each member where to serve, and the configuration text does
	// not show it (QuorumServer.isClientAddrFromStatic).
	ClientAddr string
}

// String renders the server as QuorumServer.toString does: the value of
// its line in /zookeeper/config.
func (q QuorumServer) String() string {
	role := "participant"
	if q.Observer {
		role = "observer"
	}
	s := fmt.Sprintf("%s:%d:%d:%s", bracketHost(q.Host), q.QuorumPort, q.ElectionPort, role)
	if q.ClientAddr != "" {
		s += ";" + q.ClientAddr
	}
	return s
}

// bracketHost is QuorumPeer.delimitedHostString: an IPv6 literal in
// brackets.
func bracketHost(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

// WithQuorum makes the server model an ensemble started with these
// servers in its static configuration (ParseZooCfg reads them from a
// zoo.cfg): /zookeeper/config holds the text they give, as each member
// of such an ensemble holds it. The ensemble gets one member per
// participant, as WithEnsemble would give it; whichever of the two comes
// last decides the number of members. A served fake should list no client
// address other than the one it serves on (Curator's EnsembleTracker
// reconnects to the addresses it finds there).
func WithQuorum(servers []QuorumServer) Option {
	servers = slices.Clone(servers)
	return func(c *config) {
		c.quorum = servers
		c.members = 0
		for _, q := range servers {
			if !q.Observer {
				c.members++
			}
		}
		c.members = max(c.members, 1)
	}
}

// Quorum returns the servers /zookeeper/config lists, in the order it
// lists them: those of WithQuorum, or for an ensemble made WithEnsemble
// alone one participant per member, server.1 to server.N, whose client
// address is the server's own (WithAddr) — every member of the fake is
// reached there — and whose quorum and election ports are the customary
// 2888 and 3888 counted up from server.1 (nothing listens on them, and
// clients never dial them). A standalone server has none.
func (s *Server) Quorum() []QuorumServer {
	return javaHashOrder(s.quorumServers())
}

func (s *Server) quorumServers() []QuorumServer {
	if s.cfg.quorum != nil {
		return slices.Clone(s.cfg.quorum)
	}
	if len(s.members) < 2 {
		return nil
	}
	host, _, err := net.SplitHostPort(s.cfg.addr)
	if err != nil {
		host = s.cfg.addr
	}
	out := make([]QuorumServer, len(s.members))
	for i := range out {
		out[i] = QuorumServer{ID: int64(i + 1), Host: host, QuorumPort: 2888 + i, ElectionPort: 3888 + i, ClientAddr: s.cfg.addr}
	}
	return out
}

// quorumText is the configuration node's data: QuorumMaj.toString.
func quorumText(servers []QuorumServer) []byte {
	var b strings.Builder
	for _, q := range javaHashOrder(servers) {
		fmt.Fprintf(&b, "server.%d=%s\n", q.ID, q)
	}
	fmt.Fprintf(&b, "version=%x", quorumVersion)
	return []byte(b.String())
}

// javaHashOrder orders servers as QuorumMaj's HashMap<Long, QuorumServer>
// iterates them: by bucket, the key's hash (Long.hashCode, spread as
// HashMap.hash does) masked to the table's size, which starts at 16 and
// doubles whenever the map holds more than three quarters of it. Servers
// whose ids share a bucket come in the order the server read them, which
// depends on java.util.Properties' own hash table; the fake orders them by
// id. With ids 1 to 12 the order is simply ascending.
func javaHashOrder(servers []QuorumServer) []QuorumServer {
	out := slices.Clone(servers)
	size := 16
	for len(out) > size*3/4 {
		size *= 2
	}
	bucket := func(id int64) int {
		h := int32(uint64(id) ^ uint64(id)>>32)
		h ^= int32(uint32(h) >> 16)
		return int(h) & (size - 1)
	}
	slices.SortStableFunc(out, func(a, b QuorumServer) int {
		if ba, bb := bucket(a.ID), bucket(b.ID); ba != bb {
			return ba - bb
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// initConfigNode sets every member's /zookeeper/config as the member of
// a real ensemble sets it when it loads its database; a standalone
// server's keeps what newTree gave it.
func (s *Server) initConfigNode() {
	servers := s.quorumServers()
	if len(servers) == 0 {
		return
	}
	data, now := quorumText(servers), s.now()
	for _, m := range s.members {
		n := m.tree.get(configPath)
		n.data, n.version, n.mzxid, n.mtime = slices.Clone(data), -1, quorumVersion, now
	}
}

// ParseZooCfg returns the servers whose lines /zookeeper/config holds on
// a server started with the configuration file zooCfg (a zoo.cfg): every
// server.ID key, in the forms QuorumPeer.QuorumServer accepts, except
// several addresses joined by "|" (multiAddress.enabled), which the fake
// does not model. A configuration with at most one participant runs a
// standalone server unless it sets standaloneEnabled=false
// (QuorumPeerConfig.isDistributed), and gives none. Other keys are
// ignored. It checks what the server checks when it starts: a number after
// "server.", each id once, numeric ports, distinct quorum and election
// ports, a known type.
func ParseZooCfg(zooCfg string) ([]QuorumServer, error) {
	var out []QuorumServer
	seen := map[int64]bool{}
	standaloneEnabled, participants := true, 0
	for i, line := range strings.Split(zooCfg, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if ok && key == "standaloneEnabled" {
			// Boolean.parseBoolean: "true" in any case, all else false.
			standaloneEnabled = strings.EqualFold(value, "true")
		}
		if !ok || !strings.HasPrefix(key, "server.") {
			continue
		}
		id, err := strconv.ParseInt(key[len("server."):], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %q: the server id is not a number", i+1, key)
		}
		if seen[id] {
			return nil, fmt.Errorf("line %d: server.%d given twice", i+1, id)
		}
		seen[id] = true
		q, err := parseServerValue(value)
		if err != nil {
			return nil, fmt.Errorf("line %d: server.%d=%s: %v", i+1, id, value, err)
		}
		q.ID = id
		out = append(out, q)
		if !q.Observer {
			participants++
		}
	}
	if standaloneEnabled && participants <= 1 {
		return nil, nil
	}
	return out, nil
}

// parseServerValue reads HOST:PORT:PORT[:TYPE][;[HOST:]PORT] as
// QuorumServer.initializeWithAddressString does.
func parseServerValue(value string) (QuorumServer, error) {
	var q QuorumServer
	serverPart, clientPart, hasClient := strings.Cut(value, ";")
	if strings.Contains(clientPart, ";") {
		return q, errors.New("more than one ';'")
	}
	if strings.Contains(serverPart, "|") {
		return q, errors.New("several addresses (multiAddress.enabled) are not modelled")
	}
	parts, err := hostAndPort(serverPart)
	if err != nil {
		return q, err
	}
	if len(parts) < 3 || len(parts) > 4 {
		return q, errors.New("want host:port:port[:type]")
	}
	q.Host = parts[0]
	if q.QuorumPort, err = port(parts[1]); err != nil {
		return q, err
	}
	if q.ElectionPort, err = port(parts[2]); err != nil {
		return q, err
	}
	if q.QuorumPort == q.ElectionPort {
		return q, errors.New("the quorum and election ports must differ")
	}
	if len(parts) == 4 {
		switch strings.ToLower(parts[3]) {
		case "participant":
		case "observer":
			q.Observer = true
		default:
			return q, fmt.Errorf("unknown type %q", parts[3])
		}
	}
	if hasClient {
		cparts, err := hostAndPort(clientPart)
		if err != nil || len(cparts) > 2 {
			return q, errors.New("want a client address [host:]port after ';'")
		}
		// A bare port is the wildcard address.
		host := "0.0.0.0"
		if len(cparts) == 2 {
			host = cparts[0]
		}
		p, err := port(cparts[len(cparts)-1])
		if err != nil {
			return q, err
		}
		q.ClientAddr = bracketHost(host) + ":" + strconv.Itoa(p)
	}
	return q, nil
}

// hostAndPort splits s at ':' as ConfigUtils.getHostAndPort does, keeping
// a bracketed IPv6 host whole (and unbracketed).
func hostAndPort(s string) ([]string, error) {
	if !strings.HasPrefix(s, "[") {
		return strings.Split(s, ":"), nil
	}
	end := strings.Index(s, "]")
	if end < 0 {
		return nil, fmt.Errorf("%q: no ']' after '['", s)
	}
	host, rest := s[1:end], s[end+1:]
	if rest == "" {
		return []string{host}, nil
	}
	if rest[0] != ':' {
		return nil, fmt.Errorf("%q: want ':' after ']'", s)
	}
	return append([]string{host}, strings.Split(rest[1:], ":")...), nil
}

func port(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 0 || p > 65535 {
		return 0, fmt.Errorf("port %q is not a number from 0 to 65535", s)
	}
	return p, nil
}
