package targets

// goZookeeperBugs lists the catalogue's go-zookeeper bugs beyond #229,
// one file each.
func goZookeeperBugs() []KnownBug {
	return []KnownBug{goZookeeper65()}
}
