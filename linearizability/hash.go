package linearizability

// hasher accumulates a 64-bit FNV-1a hash. Model states hash their contents
// with it so that porcupine's cache compares only states likely to be equal.
type hasher uint64

func newHasher() hasher { return 14695981039346656037 }

func (h hasher) int(v int64) hasher {
	x := uint64(v)
	for i := 0; i < 8; i++ {
		h ^= hasher(x & 0xff)
		h *= 1099511628211
		x >>= 8
	}
	return h
}

func (h hasher) string(s string) hasher {
	for i := 0; i < len(s); i++ {
		h ^= hasher(s[i])
		h *= 1099511628211
	}
	// a terminator, so that ("ab", "c") and ("a", "bc") differ
	h ^= 0xff
	h *= 1099511628211
	return h
}

func (h hasher) bool(b bool) hasher {
	if b {
		return h.int(1)
	}
	return h.int(0)
}
