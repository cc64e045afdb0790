package assign

import "github.com/beamer-lb/beamer/pkg/forwarding"

// RangeRules is the number of maximal runs of consecutive table entries with
// the same owner, not counting unowned runs: the rules a data plane matching
// non-overlapping bucket ranges (a P4/TCAM range table) needs. Runs do not
// wrap around the end of the table, since range matches do not.
func RangeRules(table []forwarding.ServerID) int {
	return countRuns(len(table), func(i int) forwarding.ServerID { return table[i] })
}

// Fragmentation is the average number of range rules per server owning at
// least one bucket: 1 when every server owns one contiguous range, 0 when no
// bucket is owned. Beamer's defragmentation targets it (the paper's fr).
func Fragmentation(buckets []forwarding.Bucket) float64 {
	rules := countRuns(len(buckets), func(i int) forwarding.ServerID { return buckets[i].Current })
	if rules == 0 {
		return 0
	}
	seen := make([]bool, idSpace)
	owners := 0
	for _, b := range buckets {
		if b.Current != forwarding.NoServer && !seen[b.Current] {
			seen[b.Current] = true
			owners++
		}
	}
	return float64(rules) / float64(owners)
}

func countRuns(n int, owner func(int) forwarding.ServerID) int {
	runs := 0
	prev := forwarding.NoServer
	for i := range n {
		o := owner(i)
		if o != prev && o != forwarding.NoServer {
			runs++
		}
		prev = o
	}
	return runs
}

// Owners returns the current owner of every bucket, the form the comparison
// metrics take.
func Owners(buckets []forwarding.Bucket) []forwarding.ServerID {
	t := make([]forwarding.ServerID, len(buckets))
	for i, b := range buckets {
		t[i] = b.Current
	}
	return t
}
