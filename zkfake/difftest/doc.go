// Package difftest holds the fake to ZooKeeper's behaviour by running the
// same random op sequences on both and comparing every answer.
//
// # Sequences
//
// Generate makes a seeded sequence of 10-20 ops (DefaultConfig()) made by 2-5
// sessions: creates of every mode (persistent, ephemeral, sequential,
// container, TTL, protected ephemeral sequential) with ACLs of every scheme
// (ip ids in their odd forms, digest ids with and without their hash, auth,
// world, sasl names and principals and a name Kerberos refuses, odd
// permission bits), sets and deletes with versions, multis of
// create/set/check/delete of up to 9 ops, reads with every kind of watch,
// ACL changes, addAuth with every scheme, sync and session close, data up
// to and over the size limits, paths with letters beyond ASCII and
// characters outside the Basic Multilingual Plane, reads of ZooKeeper's own
// nodes (the ensemble's configuration in /zookeeper/config among them),
// plus calls ZooKeeper or go-zookeeper refuse (bad paths, flags, ACLs,
// TTLs, writes to ZooKeeper's own nodes). Paths are relative to a
// base node made fresh for every run, so that sequence numbers start from
// zero and the sides compare.
//
// # Running and comparing
//
// Run runs a sequence on a Side — FakeSide, a new zkfake.Server per
// sequence, or RealSide, a real server or ensemble — and renders every
// answer as text lines (a Transcript). After each write the runner makes
// every other session Sync, which makes the events the write caused arrive
// first, and then records, per session, the events its callback received,
// and every watch channel that fired. The rendering makes the sides
// comparable:
//
//   - paths are relative to the base ("." is the base itself), and the GUID
//     of protected nodes is written _c_GUID-;
//   - errors are named when they are go-zookeeper's sentinel values
//     (compared by identity) and quoted otherwise, with the sentinels they
//     wrap: "Create with TTL flag disallowed: zk: invalid flags specified"~ErrInvalidFlags;
//   - children are sorted, so compared as sets (the server lists them in
//     hash-set order, the fake made zkfake.WithShuffledChildren in a seeded
//     one);
//   - zxids are written as their distance from the base's creation zxid,
//     z+5, so that equal text means the same zxid bijection, the same
//     order and the same number of zxids used between any two answers
//     (failed writes, multis, session closes take one each);
//   - ephemeral owners are written as the session, s1, s2;
//   - times are not compared between sides (their clocks differ); each
//     side's own times must follow its zxids instead (one time per zxid,
//     no earlier time for a later zxid), and a violation becomes a
//     "check:" line at the end of its transcript;
//   - EventNotWatching events from a closing session, which go-zookeeper
//     sends in map order, are sorted.
//
// Compare reports the first op whose lines differ as a Divergence, whose
// String shows the sequence with the agreed answers up to that op and both
// sides' lines there. A Checker runs a sequence on both sides and shrinks a
// divergence by delta debugging (Shrink) to a minimal sequence. On a server
// that other clients write to, their writes shift zxids; the Checker tells
// that from a real divergence by running the sequence again (see Checker).
//
// # The corpus
//
// cmd/zkrecord (make record) writes a real ensemble's transcripts into
// testdata/diff, one file per sequence, and TestReplayCorpus replays them on
// the fake on every go test, so the fidelity check runs where no ZooKeeper
// is installed. A corpus file reads:
//
//	# comment lines
//	sequence seed-12
//	sessions 2
//	1 s1 create a data="x" flags=ephemeral acl=open
//	  -> path=a err=nil
//	2 s2 existsW a
//	  -> exists=true stat{c=z+1 m=z+1 p=z+1 v=0 cv=0 av=0 eph=s1 len=1 n=0} err=nil watch=w1
//	3 s1 close
//	  -> closed
//	  s1 event EventSession StateDisconnected err=nil server=own
//	  s2 event EventNodeDeleted StateSyncConnected path=a err=nil
//	  w1 <- EventNodeDeleted StateSyncConnected path=a err=nil then closed
//
// An op line is its label, its session and the call with its arguments
// (Op.Line; ParseLine reads it back): data is nil or a quoted string, acl
// names an entry of ACLs(), a path "@3" is the path op 3 created. The indented
// lines under it are what it observed: its answer after "->" (a stat is
// c=czxid m=mzxid p=pzxid v=version cv=cversion av=aversion eph=owner
// len=dataLength n=numChildren), then each session's events, then each
// watch channel that fired since the op before ("wN" is the Nth watch
// channel a call returned).
//
// # Running against a real ZooKeeper
//
// With ZK_SERVERS set (loopback addresses), TestAgainstEnsemble runs 1,000
// generated sequences (ZK_DIFF_N to change, ZK_DIFF_SEED for the first
// seed) on the servers and on the fake, one at a time, and reports each
// divergence as a minimal sequence. Without it the test skips.
//
// The fake must hold the configuration the servers hold in
// /zookeeper/config, which comes from the zoo.cfg they were started with:
// NewRealSide reads it (ensemble.ZooCfg: the file ZK_ZOOCFG names, or the
// zoo.cfg .ci/ensemble wrote for a member that serves one of the servers)
// into RealSide.Quorum, every transcript records it (a corpus file's
// "quorum" lines), and FakeOptions gives it to the fake
// (zkfake.WithQuorum). TestAgainstEnsemble fails when it finds no zoo.cfg.
// The same zoo.cfg tells whether the servers have the "sasl" ACL scheme
// (an authProvider naming SASLAuthenticationProvider, as .ci/ensemble's
// does): RealSide.SASLScheme, a corpus file's "scheme sasl" line, and
// zkfake.WithSASLScheme for the fake.
package difftest
