package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// MaxDefragSteps bounds one `beamer ctl defrag` request.
const MaxDefragSteps = 1000

// DefragResult tells what a defragmentation request did.
type DefragResult struct {
	Steps  int     `json:"steps"`  // generations published
	Moved  int     `json:"moved"`  // buckets moved in all
	Before float64 `json:"before"` // rules per DIP before the first step
	After  float64 `json:"after"`  // and after the last
	Done   bool    `json:"done"`   // target rate reached (or nothing misplaced)
	// Stalled says why the run stopped early, if it did (buckets in their
	// chaining window, or no move that keeps fragmentation from rising).
	Stalled string `json:"stalled,omitempty"`
}

func (r DefragResult) String() string {
	s := fmt.Sprintf("%d defragmentation step(s) moved %d buckets: %.3f → %.3f rules per DIP", r.Steps, r.Moved, r.Before, r.After)
	switch {
	case r.Done:
		s += "; target rate reached"
	case r.Stalled != "":
		s += "; stopped: " + r.Stalled
	}
	return s
}

// Defrag runs up to steps defragmentation steps now (appendix A1), each
// published as its own generation. Moved buckets keep their old owner as
// previous owner, so their connections are daisy-chained like after any
// rebalance; buckets inside their chaining window are never moved, so
// consecutive steps do not move a bucket twice within the window. The
// threshold in params is not consulted (an operator asked for it); the
// run stops at params.TargetRate. Only beamer instances have ranges to
// defragment.
func (c *Controller) Defrag(ctx context.Context, name string, steps int, params assign.DefragParams) (DefragResult, error) {
	var res DefragResult
	if steps < 1 || steps > MaxDefragSteps {
		return res, badf("defragmentation steps %d must be in 1–%d", steps, MaxDefragSteps)
	}
	params.Threshold = max(params.Threshold, params.TargetRate)
	if err := params.Validate(); err != nil {
		return res, badf("%v", err)
	}
	in, err := c.instance(ctx, name)
	if err != nil {
		return res, err
	}
	if !hasHistories(in.config) {
		return res, badf("instance %q uses %s hashing: only instances whose buckets keep histories (beamer) have bucket ranges to defragment", name, in.config.Strategy)
	}
	// Start from the table "dips" asks for, so the plan sees final loads.
	if err := c.Reconcile(ctx, name); err != nil {
		return res, err
	}
	params.ChainWindow = uint32(in.config.ChainWindow.Seconds())
	res.Before = assign.Fragmentation(in.w.Table().Buckets)
	res.After = res.Before
	for res.Steps < steps {
		moved, done, err := c.defragStep(ctx, in, params)
		if errors.Is(err, assign.ErrDefragStalled) {
			res.Stalled = err.Error()
			break
		}
		if err != nil {
			return res, err
		}
		res.After = assign.Fragmentation(in.w.Table().Buckets)
		if done {
			res.Done = true
			break
		}
		res.Steps++
		res.Moved += moved
	}
	return res, nil
}

// defragStep publishes one step of the instance's plan, planning (again)
// when there is no plan for these parameters or the loads changed since.
// The plan lives in the instance cache only: after a controller restart
// it is made again from the published table, which is all a step needs.
func (c *Controller) defragStep(ctx context.Context, in *instance, params assign.DefragParams) (moved int, done bool, err error) {
	t := in.w.Table()
	for _, b := range t.Buckets {
		if b.Current == forwarding.NoServer {
			return 0, false, badf("instance %q has unowned buckets (no DIP with weight): nothing to defragment", in.config.Name)
		}
	}
	var changes []forwarding.BucketChange
	for attempt := 0; ; attempt++ {
		if in.defrag == nil || in.defragParams != params {
			if in.defrag, err = assign.PlanDefrag(t.Buckets, params); err != nil {
				return 0, false, err
			}
			in.defragParams = params
		}
		if in.defrag.Done(t.Buckets) {
			return 0, true, nil
		}
		changes, err = in.defrag.Step(t.Buckets, uint32(c.now().Unix()))
		if err == nil || errors.Is(err, assign.ErrDefragStalled) || attempt > 0 {
			break
		}
		in.defrag = nil // loads changed since the plan: plan again
	}
	if err != nil {
		return 0, false, err
	}
	down := map[forwarding.ServerID]bool{}
	for id, d := range in.dips {
		down[id] = d.Down
	}
	in.cut = nil
	h := c.histories(in, down, uint32(c.now().Unix()))
	for i, ch := range changes {
		changes[i].Bucket = h.MovedAt(ch.Index, t.Buckets[ch.Index], ch.Bucket)
	}
	if _, err := in.w.Publish(ctx, &forwarding.Delta{Generation: t.Generation + 1, Buckets: changes}); err != nil {
		c.forget(in)
		return 0, false, err
	}
	c.published(in)
	if err := c.reportCuts(ctx, in, t.Generation+1); err != nil {
		c.forget(in)
		return 0, false, err
	}
	return len(changes), false, nil
}

// AutoDefrag configures the controller's periodic defragmentation.
type AutoDefrag struct {
	Params assign.DefragParams // Threshold starts a run, TargetRate ends it
}

// autoDefrag runs one step on every beamer instance whose fragmentation
// is above the threshold. A stalled run is reported, not an error.
func (c *Controller) autoDefrag(ctx context.Context, a AutoDefrag) error {
	names, err := c.Instances(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		in, err := c.instance(ctx, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !hasHistories(in.config) || !a.Params.Needed(in.w.Table().Buckets) {
			continue
		}
		res, err := c.Defrag(ctx, name, 1, a.Params)
		if err != nil {
			errs = append(errs, fmt.Errorf("defragment %s: %w", name, err))
			continue
		}
		log := in.log.Info
		if res.Stalled != "" {
			log = in.log.Warn
		}
		log("defragmentation step", "steps", res.Steps, "moved", res.Moved,
			"rules_per_dip_before", res.Before, "rules_per_dip_after", res.After, "done", res.Done, "stalled", res.Stalled)
	}
	return errors.Join(errs...)
}
