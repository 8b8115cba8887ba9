package targets

// curatorBugs lists the catalogue's Curator bugs, one file each.
func curatorBugs() []KnownBug {
	return []KnownBug{
		curator315(),
		curator335(),
		curator79(),
		curator107(),
		curator604(),
	}
}
