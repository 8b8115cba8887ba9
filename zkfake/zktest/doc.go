// Package zktest is a conformance suite for ZooKeeper sessions, in the spirit
// of testing/fstest: scenarios written once against a Target, which any
// implementation — the in-memory zkfake or a real ensemble reached through
// go-zookeeper — can run. Every expected value is the one ZooKeeper 3.8.0
// and go-zookeeper v1.0.4 give, verified against real servers (standalone
// and a 3-node ensemble); where the server surprises, the scenario says so in
// a "ZooKeeper 3.8:" comment.
//
// Run runs every scenario, RunNamed a chosen few (by name or by area
// prefix, e.g. "watch"). Each scenario is a subtest named after it, so
// `go test -run 'TestX/watch/one-shot'` selects one as well.
//
// Zxids and times differ between runs and between a standalone server and
// an ensemble (whose zxids carry the epoch in their high 32 bits), so the
// suite compares zxids with each other (equal, one more than, ordered) and
// times with clock readings taken inside the scenario; everything else is
// compared exactly. Zxid-counting scenarios assume nothing else writes to
// the target while they run; ZooKeeper counts session creation and close
// as writes too.
//
// Scenarios that need session faults or ensemble members run only when the
// Env implements Expirer, Partitioner, Ticker, Members, Reconnector or
// ReplyLoser, and skip otherwise; the one that reads the ensemble's
// configuration node needs Quorum, the servers the target was started
// with, since their addresses differ from one ensemble to another. The "ops" and "persistent" scenarios
// check ZooKeeper 3.8's requests that go-zookeeper cannot send (create2,
// getEphemerals, getAllChildrenNumber, whoAmI, multiRead, checkWatches,
// removeWatches, addWatch): they speak the protocol themselves, with the
// codec of package zkfake/jute, on a connection from an Env that
// implements RawDialer, and skip on one that does not (the in-process
// fake, whose Conn answers them through extra methods tested in package
// zkfake).
//
// The scenarios:
//
//   - acl/addauth-bad-scheme: AddAuth with an unknown scheme fails and drops the connection; the session and its other credentials survive
//   - acl/addauth-ip: AddAuth with the ip scheme succeeds whatever it sends, keeps the connection and grants nothing new
//   - acl/auth-scheme: the auth scheme expands to every digest identity of the session
//   - acl/digest: digest ACLs: NoAuth until AddAuth with the right password; Exists needs nothing
//   - acl/getacl-masking: GetACL needs READ or ADMIN and masks digest hashes without ADMIN
//   - acl/invalid: malformed ACL lists fail with InvalidACL before anything else
//   - acl/ip: ip ACLs match the loopback client, by address or CIDR
//   - acl/node-permissions: Get/Children need READ, Set WRITE, SetACL ADMIN, multi check READ
//   - acl/parent-permissions: Create and Delete need CREATE and DELETE on the parent, checked before existence
//   - errors/bad-ttl: the server rejects TTLs outside 1ms..2^40-1ms with BadArguments
//   - errors/bad-version: Set, Delete and SetACL with a wrong version fail and change nothing
//   - errors/invalid-flags: go-zookeeper's own checks on create flags
//   - errors/invalid-path: go-zookeeper rejects malformed paths locally with ErrInvalidPath
//   - errors/server-refused-path: paths go-zookeeper sends but the server refuses (PathUtils.validatePath): BadArguments on the writes that check them, NoNode elsewhere
//   - errors/missing-node: every method's return values on a missing node, as go-zookeeper shapes them
//   - errors/no-children-for-ephemerals: ephemeral nodes cannot have children, whoever asks and with any flags
//   - errors/node-exists: creating an existing node fails with NodeExists for every create flavour
//   - errors/not-empty: deleting a node with children fails with NotEmpty; version is checked first
//   - errors/oversize-request: a request over jute.maxbuffer drops the connection; the session survives
//   - errors/special-nodes: /, /zookeeper and its children cannot be deleted; other writes there are allowed
//   - members/connect-without-quorum: a client that connects while a majority of the members is stopped gets no session until the quorum is back, and then one that writes
//   - members/lost-reply-reconnect: a write whose reply is lost is applied; the client reconnects with its session to the member it is sent to, which shows the write once synced
//   - members/stop-follower-then-leader: stopping a follower, then the leader: the ensemble goes on with 2 of 3, clients move with their sessions and ephemerals
//   - multi/empty: an empty multi succeeds with no results and still takes a zxid
//   - multi/failure: op k failing: its error returned, earlier ops nil, later ops "unknown error: -2", nothing applied
//   - multi/first-op-fails: a multi failing at its first op
//   - multi/sees-own-ops: later ops see earlier ops of the same multi
//   - multi/success: a successful multi's per-op results, all at one zxid
//   - multi/unknown-op: go-zookeeper rejects an op type it cannot encode
//   - ops/check-watches: checkWatches finds a watch of any session on the path, none under a recursive one; bad types are MarshallingError
//   - ops/create2: create2 answers with the path and the new node's stat from the same transaction; bad flags and paths are BadArguments
//   - ops/get-all-children-number: getAllChildrenNumber counts the nodes below a path at every depth; NoNode, NoAuth; "" is the root counted with itself
//   - ops/get-ephemerals: getEphemerals lists the session's own ephemerals under a plain string prefix; blanks or / alone mean all
//   - ops/multi-read: multiRead answers each getData and getChildren on its own, sets no watch, and refuses writes with MarshallingError
//   - ops/remove-watches: removeWatches removes only the session's own watches of a type, sends no event, NoWatcher when there is none
//   - ops/whoami: whoAmI lists the session's ip and digest identities, in the order of the server's hash set
//   - persistent/bad-mode: addWatch with an unknown mode is MarshallingError and takes any path, which checkWatches cannot always walk
//   - persistent/node: a persistent watch fires every change of its node, children changed included, and survives the node's deletion
//   - persistent/reconnect: setWatches2 re-arms persistent watches without firing what changed while the client was away
//   - persistent/recursive: a recursive watch fires for its node and every descendant, own writes included, never NodeChildrenChanged
//   - persistent/remove-half: removing a persistent watch's data or child half leaves the other half firing
//   - persistent/shared-entry: a one-shot and a persistent watch of a session on a path share one entry per table: the last set decides
//   - sequence/cversion-formula: reported Cversion is 2*creates - NumChildren
//   - sequence/deletes-do-not-advance: deleting children moves Cversion but not the next sequence number
//   - sequence/ephemeral-sequential: ephemeral sequential and protected ephemeral sequential names
//   - sequence/failed-creates-do-not-advance: failed creates move neither Cversion nor the next sequence number
//   - sequence/format: sequence suffixes are %010d of the parent's create count, empty prefix allowed
//   - session/calls-after-close: every call after Close returns ErrConnectionClosed in go-zookeeper's shapes
//   - session/close: Close removes ephemerals, fires watches, ends the closer's other watches with ErrClosing and closes its channel
//   - session/expire: expiry removes ephemerals, ends every watch with ErrSessionExpired, and the Conn carries on with a new session
//   - session/partition-heal: a partition healed within the timeout keeps the session, its ephemerals, and delivers missed watch events
//   - session/timeout-clamped: a requested session timeout above 20 ticks is clamped to 20 ticks
//   - stat/create-updates-parent: a child create sets the parent's Pzxid to its zxid and bumps Cversion and NumChildren only
//   - stat/delete-updates-parent: a child delete sets the parent's Pzxid and bumps its reported Cversion
//   - stat/set: Set bumps Version and sets Mzxid/Mtime, leaving Czxid, Ctime and Pzxid
//   - stat/setacl: SetACL bumps Aversion only, yet consumes a zxid
//   - stat/zxid-failed-writes: a failed write consumes a zxid; reads and client-side rejections do not
//   - stat/zxid-one-per-write: successive writes of one session take successive zxids
//   - tree/container-and-ttl: container and TTL nodes exist and report EphemeralOwner 0
//   - tree/create-get: a created node reads back with its data, stat and ACL; children come back in any order
//   - tree/ephemeral: an ephemeral node's owner is the creating session
//   - tree/nil-and-empty-data: nil data reads back as nil, empty data as empty
//   - tree/root: / has zxid 0, time 0, the open ACL, and a Cversion of 2*creates-children
//   - tree/system-nodes: getData, exists, getACL and getChildren of /zookeeper and its children, byte for byte: the configuration text of the target's servers, every stat field, the ACLs
//   - tree/sync: Sync returns the path it was given, even for a missing node
//   - tree/zookeeper: /zookeeper, /zookeeper/config and /zookeeper/quota exist with their 3.8 ACLs and stats
//   - watch/before-read: the watch event arrives before the watcher can read the change
//   - watch/children: a child watch fires NodeChildrenChanged with the parent's path on child create and delete
//   - watch/data-changed: a data watch fires NodeDataChanged once, then its channel closes
//   - watch/exists: an exists watch fires NodeCreated on a missing node, NodeDataChanged or NodeDeleted on an existing one
//   - watch/failed-write: a failed write fires nothing
//   - watch/missing-node: GetW and ChildrenW on a missing node leave no watch behind
//   - watch/multi: a multi fires the watches of all its ops
//   - watch/node-deleted-fans-out: deleting a node fires its data, exists and child watches from one server event
//   - watch/one-shot: a fired watch is gone; a new watch sees the next change
//   - watch/own-write: a session's own write fires its own watch
//   - watch/read-races-write: a read's watch fires even as another session deletes the node: its event never comes ahead of the read's reply
//   - watch/same-watch-twice: setting the same watch twice gives two channels, both fire, one session event
//   - watch/session-channel: watch events also arrive on the session's event channel, in zxid order
//   - watch/trigger-table: a data write fires no child watch, a child create fires no data watch
package zktest
