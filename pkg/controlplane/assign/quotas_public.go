package assign

// Quotas is how many of n buckets each server should own (quotas), for
// strategies that choose themselves which buckets move (Prism's Algorithm
// 2, pkg/strategy/prism/migration). Indexed by server id; owned[id] is what id owns now.
func Quotas(n int, servers []Server, owned []uint32) []uint32 { return quotas(n, servers, owned) }

// IDSpace is the length of the slices Quotas takes and returns.
const IDSpace = idSpace
