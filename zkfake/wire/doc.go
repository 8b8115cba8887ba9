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
// notifications (xid -1), each reply ahead of the events of every change
// made after its request (zkfake.WithAnswerCallback), as the real server
// sends them: a client never hears a watch's event before the reply that
// set the watch. A connection that
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
//
// # What is served
//
// Connect and session resumption, pings and session timeouts, every op the
// fake has, multi, auth, SASL DIGEST-MD5 logins (WithSASLUsers, below),
// setWatches and setWatches2 on reconnect, closeSession, ZooKeeper 3.8's
// requests go-zookeeper cannot send, and the four-letter words. A
// malformed or oversized frame (over jute.maxbuffer) closes only its own
// connection. Not served: ops ZooKeeper 3.8 does not know; they are
// answered ZUNIMPLEMENTED and the connection closed. The conformance suite runs over go-zookeeper, wire and
// fake in every `make test` — inside synctest bubbles over in-memory pipes,
// so in virtual time — and a scripted zkCli.sh session runs against it
// wherever Debian's ZooKeeper is installed (CI installs it), its addWatch,
// removewatches, getEphemerals, getAllChildrenNumber and whoami included.
//
// The four-letter words are those ZooKeeper 3.8 knows, answered in its
// shapes: ruok, srvr, stat, mntr, envi (kazoo's server_version() reads
// it), conf, cons, crst, dump, wchs, wchc, wchp, isro, srst, dirs, gtmk,
// stmk, hash. WithFourLetterWords sets the whitelist as
// 4lw.commands.whitelist does (ZooKeeper's default is srvr alone; the
// fake's is every word); a known word off it is refused in the server's
// words.
//
// # SASL
//
// WithSASLUsers gives the listener the users a JAAS file's Server section
// gives ZooKeeper (JAASUsers reads that file; cmd/zkfake-server -jaas takes
// it), and it authenticates SASL logins (request 102) as ZooKeeper 3.8.0
// with Java 17 does, DIGEST-MD5 being the mechanism a DigestLoginModule
// user logs in with: a challenge with realm "zk-sasl-md5" and a fresh
// nonce, the client's digest-response read and checked as Java's
// DigestMD5Server checks it, then the server's rspauth, each reply with
// zxid 0; the login adds sasl:USER to the session
// (zkfake.Conn.AddSASLIdentity), which "sasl" ACLs grant to, with
// sasl:super, on a fake server made WithSASLScheme (as authProvider.1 =
// SASLAuthenticationProvider does on the real one). Bad credentials, a
// token the mechanism refuses, a token after the login, are answered
// AUTHFAILED with a null token and the connection closed (the session
// lives on until its timeout); a token that makes the real server throw
// otherwise (a null buffer, a malformed number) closes the connection
// with no reply. A listener without users answers every token with no
// error and a null token, as a server without a JAAS file does — which
// leaves kazoo's SASL login asking again forever, there as here.
//
// Left out: GSSAPI (Kerberos) and the system properties that change the
// server's SASL (zookeeper.superUser, its superPassword,
// allowSaslFailedClients, enforced SASL, the Kerberos name rules, a JAAS
// file's ${...}). A sasl identity belongs to the session, as every
// identity does in the fake, where the server keeps it per connection: a
// client that reconnects without logging in again keeps it here (kazoo
// logs in on every connection). And every ZooKeeper 3.8 shares the name
// of the last user it found among all connections, so that an unknown
// user with that user's password logs in as the unknown name
// (ZOOKEEPER-4839, fixed in 3.9.3; reproduced by a raw client on the
// 3.8.0 ensemble): the fake, as 3.9.3 does, refuses every unknown user.
//
// # In the same process
//
// ServePipe serves the fake to go-zookeeper's real client over in-memory
// pipes, with no socket, for code that takes a *zk.Conn itself
// (go-zookeeper's zk.Lock, and much production code): pipe.Connect(timeout)
// is zk.Connect with the pipe's dialer (pipe.Dial, for zk.WithDialer) and
// a host provider that resolves no name (pipe.HostProvider()). Inside a
// testing/synctest bubble the real client's timers run in virtual time
// too, and the fake's faults (Server.Expire, lost replies, stopped
// members) reach it as they would from a real server (ExampleServePipe
// runs zk.Lock through an expiry). The listener negotiates session
// timeouts with the server's own tick time (zkfake.WithTickTime).
//
// pipe.NewClient gives a client its own network path, and the faults of a
// zkfake.Conn in the same words (Client.Partition and Heal, Pause and
// Resume, Crash, ReconnectTo): a partition holds the client's bytes both
// ways until it heals, as a network does; a crash closes its connection
// and refuses its dials. With WithGate, the client's requests wait at the
// server until the gate lets each through, which is how package fuzz
// decides the interleaving of real clients. A Pipe whose clients send
// nothing but pings for an hour of virtual time takes its test for stuck
// and stops answering, so that synctest reports the deadlock instead of
// spinning (Pipe, WithIdleLimit); and it answers a reconnecting
// go-zookeeper client in the order that keeps go-zookeeper's own data
// race on reconnect (go-zookeeper/zk#35) from firing under -race (Pipe).
//
// # The admin interface
//
// cmd/zkfake-server -admin 127.0.0.1:8181 serves [Listener.Admin] beside
// the ZooKeeper port, loopback only, and prints its address on its second
// line:
//
//   - GET /sessions: the live sessions (id, timeout, ephemerals,
//     connected, partitioned).
//   - POST /sessions/{id}/expire: the server expires the session now.
//   - POST /sessions/{id}/drop: its connection drops; the client
//     reconnects with its session.
//   - POST /sessions/{id}/partition and /heal: its connection drops and
//     reconnects are refused until heal (it expires past its timeout).
//   - POST /lose-reply {"op","path_prefix","session","nth","applied"}: the
//     next matching reply is lost (zkfake.ReplyLoss).
//   - POST /members/{i}/stop and /start: with -members 3, stops or starts
//     an ensemble member.
//   - POST /clock/advance?by=5s: with -manual-clock, moves the fake's time
//     (its session expiries and reaper); the listener's own timeout of a
//     silent connection stays on the wall clock.
//   - GET /tree and GET /log: every znode (data in base64, stat, ACL); the
//     event log (with -event-log).
//   - POST /reset: ends every session and empties the tree, for the next
//     test.
//
// TestKazooAgainstTheServedFake (cmd/zkfake-server) runs kazoo against the
// served fake and its admin interface wherever Debian's python3-kazoo is
// installed (CI installs it).
//
// # kazoo's own test suite
//
// testdata/kazoo/run_suite.py runs kazoo's test suite against any servers
// (it needs Debian's python3-kazoo, python3-pytest, python3-mock,
// python3-objgraph and python3-pytest-timeout; the tests that stop servers
// are skipped):
//
//	go run ./cmd/zkfake-server -addr 127.0.0.1:23181 -tick 200ms -max-connections 0 -jaas testdata/sasl/jaas.conf &
//	ZK_SERVERS=127.0.0.1:23181 python3 testdata/kazoo/run_suite.py --timeout=60
//	ZK_SERVERS=$(.ci/ensemble up) python3 testdata/kazoo/run_suite.py --timeout=60
//
// On 2026-12-03, of kazoo 2.8's 479 tests, the ensemble (.ci/ensemble,
// with its SASL users) passed 463, failed 3 and skipped 13; the served fake
// (the command above) passed the same 463 in each of two runs, with the
// same 3 failures and 13 skips, about 4 minutes a run. The three are the
// reconfiguration tests: .ci/ensemble runs without reconfigEnabled, and
// the fake has no reconfiguration. kazoo's SASL tests (test_sasl.py) pass
// their four DIGEST-MD5 tests on either and skip their two GSSAPI ones,
// which need Kerberos; in cmd/zkfake-server, TestKazooSASLAgainstTheServedFake
// runs the four wherever python3-pure-sasl is installed (CI installs it).
// Without -jaas, the four hang on the fake as on a server without a JAAS
// file.
//
// The suite holds up to 62 connections open at once (the fake's stat
// counted the suite's open sockets and its own, and no more, throughout a
// run of the gevent and eventlet tests): with the fake's default cap of 60
// (-max-connections, as ZooKeeper's maxClientCnxns defaults to 60), the
// tests that start past it are refused their connection, as that server
// refuses them, and time out one after another: the cascade is kazoo's
// suite's, not a stall of the fake's. With the cap off
// the 165 gevent and eventlet tests pass, also with three busy loops on
// the machine's two cores: no reply or ping of the fake's comes late to a
// slow client there.
package wire
