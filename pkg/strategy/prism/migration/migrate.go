package migration

import "github.com/beamer-lb/beamer/pkg/forwarding"

// Round is one round of Algorithm 1: the signatures it found that earlier
// rounds had not.
type Round struct {
	New int `json:"new"`
}

// Migrate is Algorithm 1 for one pool update. poll reads the SCT's current
// signatures of the affected bins, each with the server that holds it (the
// bin's owner before the update); the first round copies all of them, each
// later round the ones that arrived meanwhile (SYNs during the copy),
// until a round brings fewer than one new signature or maxRounds rounds
// ran (the paper's T_limit). The caller then flips the bins, with the
// collected entries in the same generation or an earlier one, and runs one
// final round after the flip (Final).
func Migrate(poll func() (map[uint64]forwarding.ServerID, error), maxRounds int) (map[uint64]forwarding.ServerID, []Round, error) {
	got := map[uint64]forwarding.ServerID{}
	var rounds []Round
	for len(rounds) < maxRounds {
		sigs, err := poll()
		if err != nil {
			return got, rounds, err
		}
		n := 0
		for sig, id := range sigs {
			if _, ok := got[sig]; !ok {
				got[sig] = id
				n++
			}
		}
		rounds = append(rounds, Round{New: n})
		if len(rounds) > 1 && n < 1 {
			break
		}
		if len(rounds) == 1 && n == 0 {
			break // nothing to migrate: C1 = 0
		}
	}
	return got, rounds, nil
}

// Final is the round after the flip: signatures of the moved bins the
// migration had not copied (SYNs that reached the old owner between the
// last round and the flip), to be added at once.
func Final(poll func() (map[uint64]forwarding.ServerID, error), copied map[uint64]forwarding.ServerID) (map[uint64]forwarding.ServerID, error) {
	sigs, err := poll()
	if err != nil {
		return nil, err
	}
	late := map[uint64]forwarding.ServerID{}
	for sig, id := range sigs {
		if _, ok := copied[sig]; !ok {
			late[sig] = id
		}
	}
	return late, nil
}
