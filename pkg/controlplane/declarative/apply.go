package declarative

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// Options are Apply's.
type Options struct {
	// DryRun computes and returns the changes without making any.
	DryRun bool
	// Prune deletes instances missing from the document; without it
	// Apply refuses a document that leaves an instance out.
	Prune bool
	// Recreate deletes and creates an instance whose create-only
	// configuration (strategy, VIPs, buckets, ...) differs; without it
	// Apply refuses. Either way it is never done silently.
	Recreate bool
	// CheetahKeys gives a cheetah instance created by Apply its cookie
	// keys from the document's keys_file ("" when none is named). Nil:
	// random keys, and a keys_file is refused.
	CheetahKeys func(instance, keysFile string) (cookie.Keys, error)
	// Progress, when set, is told of each change before it is made.
	Progress func(Change)
}

// ErrRefused wraps Apply's refusal of a document it cannot apply as asked.
var ErrRefused = errors.New("refused")

// Apply makes the live state equal to desired: it exports the live state,
// diffs it against desired and submits the changes in Diff's order, each
// through the elected controller like the matching ctl command (removed
// servers go through the controller's normal removal: weight 0, daisy
// chaining through the chain window, retirement). Every refusal is found
// before any change is made. It returns the changes made (with DryRun, the
// changes it would make); none when desired equals the live state.
func Apply(ctx context.Context, op Operator, desired *Document, opts Options) ([]Change, error) {
	if err := desired.Validate(); err != nil {
		return nil, err
	}
	current, err := Export(ctx, op)
	if err != nil {
		return nil, err
	}
	changes := Diff(current, desired)
	var refused []string
	for _, c := range changes {
		switch {
		case c.Kind == Refused,
			c.Kind == DeleteInstance && !opts.Prune,
			c.Kind == RecreateInstance && !opts.Recreate:
			refused = append(refused, c.String())
		}
	}
	if len(refused) > 0 {
		return changes, fmt.Errorf("%w, nothing changed:\n%s", ErrRefused, strings.Join(refused, "\n"))
	}
	// Fetch every key before the first change, so a bad keys file stops
	// apply before it did anything.
	keys := map[string]cookie.Keys{}
	for _, c := range changes {
		if (c.Kind == CreateInstance || c.Kind == RecreateInstance) && c.desired.Cheetah != nil {
			k, err := cheetahKeys(opts, c.desired)
			if err != nil {
				return changes, fmt.Errorf("instance %q: cheetah: %w", c.Instance, err)
			}
			keys[c.Instance] = k
		}
	}
	if opts.DryRun {
		return changes, nil
	}
	for i, c := range changes {
		if opts.Progress != nil {
			opts.Progress(c)
		}
		for _, r := range requests(c, keys) {
			if _, err := op.Submit(ctx, r); err != nil {
				return changes[:i], fmt.Errorf("instance %q: %s: %w (changes before it were made; run diff to see what is left)", c.Instance, r.Op, err)
			}
		}
	}
	return changes, nil
}

// requests are the controller requests making one change.
func requests(c Change, keys map[string]cookie.Keys) []controller.Request {
	r := controller.Request{Instance: c.Instance}
	switch c.Kind {
	case CreateInstance, RecreateInstance:
		cfg := c.desired.config()
		if cfg.Cheetah != nil {
			cfg.Cheetah.Keys = keys[c.Instance]
		}
		create := controller.Request{Op: controller.OpCreateInstance, Instance: c.Instance, Config: cfg}
		if c.Kind == CreateInstance {
			return []controller.Request{create}
		}
		return []controller.Request{{Op: controller.OpDeleteInstance, Instance: c.Instance}, create}
	case DeleteInstance:
		r.Op = controller.OpDeleteInstance
	case AddServers:
		r.Op = controller.OpAddDIP
		for _, s := range c.Servers {
			r.DIPs = append(r.DIPs, controller.NewDIP{ID: s.ID, Addr: s.Address, Weight: s.Weight})
		}
	case RemoveServers:
		r.Op = controller.OpRemoveDIP
		for _, s := range c.Servers {
			r.IDs = append(r.IDs, s.ID)
		}
	case SetWeight:
		r.Op, r.ID, r.Weight = controller.OpSetWeight, c.Servers[0].ID, c.Servers[0].Weight
	case Drain:
		r.Op, r.ID = controller.OpDrain, c.Servers[0].ID
	case Undrain:
		r.Op, r.ID = controller.OpUndrain, c.Servers[0].ID
	default:
		return nil
	}
	return []controller.Request{r}
}

// cheetahKeys are the keys of a cheetah instance Apply creates.
func cheetahKeys(opts Options, in *Instance) (cookie.Keys, error) {
	if opts.CheetahKeys != nil {
		return opts.CheetahKeys(in.Name, in.Cheetah.KeysFile)
	}
	if in.Cheetah.KeysFile != "" {
		return cookie.Keys{}, errors.New("keys_file given but this caller reads no key files")
	}
	var ks cookie.Keys
	for i := range ks.Keys {
		k, err := cookie.NewKey()
		if err != nil {
			return ks, err
		}
		ks.Keys[i] = k
	}
	return ks, nil
}

// Requests is how many controller requests the changes take (each one
// rebalance at most): what apply reports.
func Requests(changes []Change) int {
	n := 0
	for _, c := range changes {
		n += len(requests(c, nil))
	}
	return n
}
