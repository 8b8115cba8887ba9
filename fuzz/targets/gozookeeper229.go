package targets

// samuel/go-zookeeper#229: go-zookeeper's own zk.Lock, v1.0.4, unchanged
// (ZKLock, over real go-zookeeper clients), which still has the bug; the
// campaign is zk.Lock/orphan's.

func goZookeeper229() KnownBug {
	orphan := ZKLockDefects()[0]
	return KnownBug{
		Name: "samuel/go-zookeeper#229",
		// The issue's own title is not in the record at hand; its open
		// fix, samuel/go-zookeeper#237, names what it fixes so.
		Title:  "(as its fix, #237, puts it) Check and clean nodes which were created by the server, but client is not aware of it",
		Recipe: "zk.Lock, go-zookeeper's lock recipe (v1.0.4)",
		Mechanism: "Lock creates its ephemeral sequential node and then lists the directory; when that listing, or anything after the create, fails, Lock returns the error without deleting the node. " +
			"The node lives on with the session, ahead of every later contender, the client's own next Lock included, and nobody will ever delete it.",
		Schedule:  "the connection is lost after Lock's create, while it lists the directory (the request or its reply lost), and the session resumes",
		Symptom:   "Lock fails once; then every Lock on the path, the same client's too, waits for ever behind the orphaned node",
		Fixed:     "open upstream: samuel/go-zookeeper#237, open since 2020-04-02, would find and delete the node after an error; go-zookeeper/zk v1.0.4, the maintained fork, has the same code",
		Detectors: orphan.Detectors,
		Mark:      orphan.Mark,
		Target:    ZKLock(),
		Options:   orphan.Options,
	}
}
