package assign

// Stable hashing for Sticky. The values must never change between releases
// or platforms: every member of a group computes the assignment on its own
// and they must agree, so only fixed, documented functions are used here
// (FNV-1a 64 followed by the SplitMix64 finaliser); hash/maphash is
// deliberately not used because it is seeded per process.

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// fnv1a folds s into the FNV-1a 64 state h.
func fnv1a(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime64
	}
	return h
}

// mix64 is the SplitMix64 finaliser: a bijection with good avalanche.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// memberHash hashes a member ID.
func memberHash(id string) uint64 {
	return mix64(fnv1a(fnvOffset64, id))
}

// partitionHash hashes (topic, id). The topic length is folded in first so
// that no two (topic, id) pairs share an encoding.
func partitionHash(topic string, id int32) uint64 {
	h := uint64(fnvOffset64)
	n := uint64(len(topic))
	for i := 0; i < 8; i++ {
		h ^= n >> (8 * i) & 0xff
		h *= fnvPrime64
	}
	h = fnv1a(h, topic)
	u := uint32(id)
	for i := 0; i < 4; i++ {
		h ^= uint64(u>>(8*i)) & 0xff
		h *= fnvPrime64
	}
	// Offset before mixing so that partitionHash and memberHash values are
	// unrelated even for colliding FNV states.
	return mix64(h + 0x9e3779b97f4a7c15)
}

// score is the rendezvous weight of a member (by its memberHash) for a
// partition (by its partitionHash).
func score(mh, ph uint64) uint64 {
	return mix64(mh ^ ph)
}

// leaderHash hashes a broker ID (-1 for "no leader") for Balanced's
// member-to-leader affinity. The offset keeps it unrelated to partitionHash.
func leaderHash(leader int32) uint64 {
	return mix64(uint64(uint32(leader)) + 0x632be59bd9b4e019)
}
