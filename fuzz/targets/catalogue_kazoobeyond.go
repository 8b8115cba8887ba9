package targets

// kazooBeyondBugs lists the catalogue's kazoo bugs of recipes beyond the
// lock, the election, the read/write lock and the semaphore: a data
// watch and a queue, one file each.
func kazooBeyondBugs() []KnownBug {
	return []KnownBug{kazoo58(), kazoo177(), kazoo359()}
}
