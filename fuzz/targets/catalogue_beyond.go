package targets

// beyondBugs lists the catalogue's bugs of recipes beyond the lock, the
// election, the read/write lock and the semaphore: barriers, queues,
// caches and group membership, one file each.
func beyondBugs() []KnownBug {
	return []KnownBug{curator233(), curator258(), curator391(), kazoo366()}
}
