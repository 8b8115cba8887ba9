package targets

// curatorLatchBugs lists the catalogue's bugs of Curator's LeaderLatch,
// one file each, on the port in curatorlatch.go and the target in
// leaderlatch.go.
func curatorLatchBugs() []KnownBug {
	return []KnownBug{
		curator460(),
		curator498(),
		curator653(),
		curator696(),
	}
}
