package difftest

import (
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zksim/zksim/zkfake"
	"github.com/zksim/zksim/zkfake/zktest"
)

// FakeSide runs each sequence on a new zkfake.Server. Run it inside a
// testing/synctest bubble: the runner's waits then take no wall-clock time.
// A FakeSide runs one sequence at a time.
type FakeSide struct {
	// Options are passed to zkfake.NewServer; the tickTime defaults to
	// 200ms, the tick of the project's real ensembles.
	Options []zkfake.Option

	srv *zkfake.Server
}

// FakeOptions returns the options that make a FakeSide's servers hold the
// configuration quorum in /zookeeper/config (zkfake.WithQuorum), as the
// real servers a transcript was recorded on do (Transcript.Quorum,
// RealSide.Quorum), none for a standalone server's, and give them the
// "sasl" ACL scheme if those servers have it (zkfake.WithSASLScheme;
// Transcript.SASLScheme, RealSide.SASLScheme). The fake stays a single
// member: the runner syncs every session after each write, so a
// sequence's answers do not depend on which member a session reads from.
func FakeOptions(quorum []zkfake.QuorumServer, saslScheme bool) []zkfake.Option {
	var opts []zkfake.Option
	if saslScheme {
		opts = append(opts, zkfake.WithSASLScheme())
	}
	if quorum == nil {
		return opts
	}
	return append(opts, zkfake.WithQuorum(quorum), zkfake.WithEnsemble(1))
}

// server returns the server of the current sequence, starting it if need
// be.
func (f *FakeSide) server() *zkfake.Server {
	if f.srv == nil {
		opts := append([]zkfake.Option{zkfake.WithTickTime(200 * time.Millisecond), zkfake.WithoutEventLog()}, f.Options...)
		f.srv = zkfake.NewServer(opts...)
	}
	return f.srv
}

// Begin creates the base under /zksim-diff the way the real side does.
func (f *FakeSide) Begin(name string) (string, int64, error) {
	admin, _, err := f.server().Connect(sessionTimeout)
	if err != nil {
		return "", 0, err
	}
	for _, cred := range allDigests() {
		if err := admin.AddAuth("digest", []byte(cred)); err != nil {
			return "", 0, fmt.Errorf("AddAuth(%s): %v", cred, err)
		}
	}
	base := "/zksim-diff/" + name
	czxid, err := createBase(admin, base)
	return base, czxid, err
}

// Connect opens a session on the current server.
func (f *FakeSide) Connect(onEvent func(zk.Event)) (zktest.Conn, <-chan zk.Event, error) {
	c, events, err := f.server().Connect(sessionTimeout, zkfake.WithEventCallback(onEvent))
	if err != nil {
		return nil, nil, err
	}
	return c, events, nil
}

// End stops the server, which ends every session it still has; the next
// sequence gets a new one.
func (f *FakeSide) End(string) error {
	if f.srv != nil {
		f.srv.Close()
		f.srv = nil
	}
	return nil
}
