package difftest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/zktest"
	"github.com/zksim/zksim/zkfake/zktest/ensemble"
)

// RealSide runs sequences on a real ZooKeeper, each under a fresh base
// /zksim-diff/<run>/<n>-<name>, where <run> is unique to this RealSide.
// Sequences must run one at a time: zxids are compared by their distance
// from the base's, which other traffic on the server would change.
type RealSide struct {
	// Quorum is the configuration the servers were started with: the
	// servers their /zookeeper/config lists (zkfake.ParseZooCfg of their
	// zoo.cfg), none for a standalone server. Run records it in every
	// transcript. NewRealSide sets it from the zoo.cfg ensemble.ZooCfg
	// finds, and leaves it nil when it finds none.
	Quorum []zkfake.QuorumServer
	// SASLScheme is whether the servers have the "sasl" ACL scheme: their
	// zoo.cfg names SASLAuthenticationProvider as an authProvider, as
	// .ci/ensemble's does. A fake compared with them needs it too
	// (FakeOptions).
	SASLScheme bool

	servers []string
	admin   *zk.Conn
	run     string
	n       atomic.Int64
}

// NewRealSide connects to servers (host:port, loopback addresses only)
// with a session that creates and removes the bases. Close it when done.
func NewRealSide(servers []string) (*RealSide, error) {
	if len(servers) == 0 {
		return nil, fmt.Errorf("difftest: no servers")
	}
	for _, s := range servers {
		host, _, err := net.SplitHostPort(s)
		if err != nil || net.ParseIP(host) == nil || !net.ParseIP(host).IsLoopback() {
			return nil, fmt.Errorf("difftest: server %q: only loopback host:port addresses are allowed", s)
		}
	}
	rs := &RealSide{servers: servers, run: fmt.Sprintf("%016x", rand.Uint64())}
	if zooCfg, err := ensemble.ZooCfg(servers); err == nil {
		if rs.Quorum, err = zkfake.ParseZooCfg(zooCfg); err != nil {
			return nil, fmt.Errorf("difftest: the servers' configuration: %v", err)
		}
		rs.SASLScheme = saslProvider(zooCfg)
	}
	admin, err := rs.dialAdmin()
	if err != nil {
		return nil, err
	}
	rs.admin = admin
	// The admin session holds every identity a sequence can use, so that
	// it can list and delete whatever a sequence created.
	for _, cred := range allDigests() {
		if err := admin.AddAuth("digest", []byte(cred)); err != nil {
			admin.Close()
			return nil, fmt.Errorf("difftest: AddAuth(%s): %v", cred, err)
		}
	}
	return rs, nil
}

// dialAdmin connects the admin session and waits until it is established.
func (rs *RealSide) dialAdmin() (*zk.Conn, error) {
	ready := make(chan struct{})
	var once sync.Once
	c, events, err := zk.Connect(rs.servers, sessionTimeout,
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
				once.Do(func() { close(ready) })
			}
		}),
		zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
	if err != nil {
		return nil, err
	}
	go func() {
		for range events {
		}
	}()
	select {
	case <-ready:
		return c, nil
	case <-time.After(waitLimit):
		c.Close()
		return nil, fmt.Errorf("difftest: no session with %v within %v", rs.servers, waitLimit)
	}
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// Begin creates the base for a sequence.
func (rs *RealSide) Begin(name string) (string, int64, error) {
	base := fmt.Sprintf("/zksim-diff/%s/%d-%s", rs.run, rs.n.Add(1), name)
	czxid, err := createBase(rs.admin, base)
	return base, czxid, err
}

// Connect opens a session with go-zookeeper.
func (rs *RealSide) Connect(onEvent func(zk.Event)) (zktest.Conn, <-chan zk.Event, error) {
	c, events, err := zk.Connect(rs.servers, sessionTimeout, zk.WithEventCallback(onEvent),
		zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
	if err != nil {
		return nil, nil, err
	}
	return c, events, nil
}

// End deletes the base and everything under it.
func (rs *RealSide) End(base string) error {
	if base == "" {
		return nil
	}
	return zktest.DeleteTree(rs.admin, base)
}

// Close removes this side's run directory and closes the admin session.
func (rs *RealSide) Close() error {
	err := zktest.DeleteTree(rs.admin, "/zksim-diff/"+rs.run)
	// Other runs may share /zksim-diff; it goes only once it is empty.
	if derr := rs.admin.Delete("/zksim-diff", -1); derr != nil && derr != zk.ErrNotEmpty && derr != zk.ErrNoNode && err == nil {
		err = derr
	}
	rs.admin.Close()
	return err
}

// createBase creates base's missing ancestors and then base itself, which
// must not exist yet, and returns base's creation zxid.
func createBase(c zktest.Conn, base string) (int64, error) {
	parts := strings.Split(base, "/")
	for i := 2; i < len(parts); i++ {
		parent := strings.Join(parts[:i], "/")
		if _, err := c.Create(parent, nil, zk.FlagPersistent, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			return 0, fmt.Errorf("creating %s: %v", parent, err)
		}
	}
	if _, err := c.Create(base, nil, zk.FlagPersistent, zk.WorldACL(zk.PermAll)); err != nil {
		return 0, fmt.Errorf("creating %s: %v", base, err)
	}
	_, st, err := c.Exists(base)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %v", base, err)
	}
	return st.Czxid, nil
}

// saslProvider reports whether a server started with zooCfg has the
// "sasl" ACL scheme: an authProvider.N key names
// SASLAuthenticationProvider (ProviderRegistry.initialize).
func saslProvider(zooCfg string) bool {
	for _, line := range strings.Split(zooCfg, "\n") {
		key, value, _ := strings.Cut(strings.TrimSpace(line), "=")
		if strings.HasPrefix(strings.TrimSpace(key), "authProvider.") &&
			strings.TrimSpace(value) == "org.apache.zookeeper.server.auth.SASLAuthenticationProvider" {
			return true
		}
	}
	return false
}
