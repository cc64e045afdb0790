package dpbench

import (
	"slices"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/awfd"
)

// liveAWFDRecord puts the table's servers in classes 1–4 in turn.
func liveAWFDRecord(t *forwarding.Table) (*awfd.Record, error) {
	var ids []forwarding.ServerID
	for id := range t.Servers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	w := make([]int, len(ids))
	for i := range w {
		w[i] = 1 + i%4
	}
	return awfd.Build(1, 0, 4, ids, w)
}
