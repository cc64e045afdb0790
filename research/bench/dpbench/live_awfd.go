package dpbench

import (
	"slices"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/awfd"
	"github.com/beamer-lb/beamer/pkg/strategy/awfd/classes"
)

// Every server in a class (weights 1–4): a miss takes the whole Algorithm 1
// path, not the no-record fallback.
func init() {
	liveExtra[forwarding.StrategyAWFD] = func(m *dataplane.Mux, cfg forwarding.Instance, t *forwarding.Table) error {
		rec, err := liveAWFDRecord(t)
		if err != nil {
			return err
		}
		return awfd.SetRecord(m.WithInstance, cfg.Name, rec)
	}
}

// liveAWFDRecord puts the table's servers in classes 1–4 in turn.
func liveAWFDRecord(t *forwarding.Table) (*classes.Record, error) {
	var ids []forwarding.ServerID
	for id := range t.Servers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	w := make([]int, len(ids))
	for i := range w {
		w[i] = 1 + i%4
	}
	return classes.Build(1, 0, 4, ids, w)
}
