// Package wire serves a zkfake.Server over ZooKeeper's client protocol, on a
// TCP listener (Listen, Serve) or over in-memory pipes to go-zookeeper
// clients in the same process (ServePipe), so that unmodified clients —
// go-zookeeper's zk.Connect, the Java client and zkCli.sh, kazoo — can run
// against the in-memory fake.
//
// Each session a client opens is a *zkfake.Conn on the server. Requests are
// decoded from jute frames (with package zkfake/jute) and run on that Conn
// in order — ZooKeeper 3.8's requests go-zookeeper cannot send (addWatch,
// removeWatches, checkWatches, multiRead, getEphemerals,
// getAllChildrenNumber, whoAmI, create2) on its extra methods; its results
// and go-zookeeper error values go back as the real server's replies and
// error codes; its watch events, persistent watches' too, go out as
// notifications (xid -1). A connection that
// drops without closeSession leaves the session alive until its negotiated
// timeout passes with no frame from the client; a client that reconnects in
// time with the session's id and password resumes it, and one that comes too
// late gets the zero answer it reads as expiry.
//
// The listener also answers the four-letter words ZooKeeper 3.8 knows, in
// its shapes and with its whitelist (WithFourLetterWords), caps frames at
// jute.maxbuffer (MaxFrameSize) and connections at maxClientCnxns, and
// drops only the one connection that sends a malformed frame. Its own
// faults — Drop, Partition, Heal — act between a client and the listener,
// Reset makes the server new for the next test, and Admin serves all of it,
// with the fake's server-side faults, as JSON over HTTP for test suites in
// any language (cmd/zkfake-server -admin).
package wire
