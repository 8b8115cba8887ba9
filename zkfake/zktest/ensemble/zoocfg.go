package ensemble

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/zksim/zksim/zkfake/zktest"
)

// An ensemble's /zookeeper/config holds the server lines of the static
// configuration its members were started with, which no client request
// tells in any other form. A test that compares the fake with the
// ensemble gives the fake those lines (zkfake.WithQuorum), and the
// scenarios that check the node's text read them; both find them here.

// ZooCfgEnv names the environment variable that points at the static
// configuration file (zoo.cfg) of a member of the ensemble in ZK_SERVERS.
const ZooCfgEnv = "ZK_ZOOCFG"

// ZooCfg returns the static configuration of the ensemble at servers: the
// file ZK_ZOOCFG names, or else the zoo.cfg of a member that .ci/ensemble
// runs ($ZKSIM_ENSEMBLE_DIR, by default $TMPDIR/zksim-ensemble) and whose
// clientPortAddress:clientPort is one of servers, so that a file left by
// some other ensemble is never taken for this one's. It fails when
// neither is found.
func ZooCfg(servers []string) (string, error) {
	if path := os.Getenv(ZooCfgEnv); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("%s: %v", ZooCfgEnv, err)
		}
		return string(b), nil
	}
	dir := os.Getenv("ZKSIM_ENSEMBLE_DIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "zksim-ensemble")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "member*", "zoo.cfg"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil && slices.Contains(servers, clientAddress(string(b))) {
			return string(b), nil
		}
	}
	return "", fmt.Errorf("no static configuration for %v: set %s to a member's zoo.cfg (none of %s/member*/zoo.cfg serves them)", servers, ZooCfgEnv, dir)
}

// clientAddress is where a member started with zooCfg serves clients, as
// host:port, or "" when the file does not say.
func clientAddress(zooCfg string) string {
	var host, port string
	for _, line := range strings.Split(zooCfg, "\n") {
		key, value, _ := strings.Cut(strings.TrimSpace(line), "=")
		switch strings.TrimSpace(key) {
		case "clientPortAddress":
			host = strings.TrimSpace(value)
		case "clientPort":
			port = strings.TrimSpace(value)
		}
	}
	if host == "" || port == "" {
		return ""
	}
	return net.JoinHostPort(host, port)
}

// QuorumServers returns the servers of the ensemble's static
// configuration (see ZooCfg), for zktest.Quorum. It reads the file itself
// rather than through the fake's zkfake.ParseZooCfg: the scenario that
// checks the fake's /zookeeper/config must not take its expectation from
// the code it checks. It reads the forms .ci/ensemble and most zoo.cfg
// files write, server.ID=HOST:PORT:PORT[:TYPE][;[HOST:]PORT] with a name
// or IPv4 host, and refuses the rest.
func (e *Env) QuorumServers() ([]zktest.QuorumServer, error) {
	text, err := ZooCfg(e.target.servers)
	if err != nil {
		return nil, err
	}
	var out []zktest.QuorumServer
	participants, standalone := 0, true
	for _, line := range strings.Split(text, "\n") {
		key, value, _ := strings.Cut(strings.TrimSpace(line), "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if key == "standaloneEnabled" {
			standalone = strings.EqualFold(value, "true")
		}
		id, isServer := strings.CutPrefix(key, "server.")
		if !isServer {
			continue
		}
		q, err := quorumServer(id, value)
		if err != nil {
			return nil, fmt.Errorf("zoo.cfg: %s=%s: %v", key, value, err)
		}
		if !q.Observer {
			participants++
		}
		out = append(out, q)
	}
	if standalone && participants <= 1 {
		// QuorumPeerConfig runs a lone participant standalone.
		return nil, nil
	}
	return out, nil
}

// quorumServer reads one server line's id and value.
func quorumServer(id, value string) (zktest.QuorumServer, error) {
	var q zktest.QuorumServer
	var err error
	if q.ID, err = strconv.ParseInt(id, 10, 64); err != nil {
		return q, errors.New("the id is not a number")
	}
	server, client, hasClient := strings.Cut(value, ";")
	parts := strings.Split(server, ":")
	if len(parts) < 3 || len(parts) > 4 || strings.ContainsAny(server, "[|") {
		return q, errors.New("not HOST:PORT:PORT[:TYPE]")
	}
	q.Host = parts[0]
	if q.QuorumPort, err = strconv.Atoi(parts[1]); err != nil {
		return q, err
	}
	if q.ElectionPort, err = strconv.Atoi(parts[2]); err != nil {
		return q, err
	}
	q.Observer = len(parts) == 4 && strings.EqualFold(parts[3], "observer")
	if hasClient {
		host, port, found := strings.Cut(client, ":")
		if !found {
			host, port = "0.0.0.0", client
		}
		if _, err := strconv.Atoi(port); err != nil {
			return q, err
		}
		q.ClientAddr = host + ":" + port
	}
	return q, nil
}
