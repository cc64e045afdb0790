package ctlstrategy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Ctl is the controller as a strategy's hooks see it. Its methods, and the
// hooks given it, run on the controller's loop (one operation at a time),
// never beside it; background work reaches it through Host.Do.
type Ctl interface {
	Now() time.Time
	Logger() *slog.Logger
	// State is the strategy's own state in this controller (StateMaker),
	// nil if it keeps none. A controller that restarts starts with a fresh
	// one: what it holds must be rebuilt from the store or the servers.
	State() any
	// Options are the strategy's controller options
	// (controller.Options.Strategies), nil if none were given.
	Options() any
	// Metrics is what the strategy's MetricsMaker made, or nil.
	Metrics() any
	// Instances lists the instances in the store and those this
	// controller has loaded since.
	Instances(ctx context.Context) ([]string, error)
	// Loaded are the instances this controller holds loaded: a cheap
	// list (no store read) of those it worked on lately.
	Loaded() []string
	// Load is the named instance, from the controller's cache or the store.
	Load(ctx context.Context, name string) (Instance, error)
	// Reconcile plans the named instance's next generation and publishes
	// it if anything changed.
	Reconcile(ctx context.Context, name string) error
}

// Instance is a loaded instance, valid while the hook it is given to runs.
type Instance interface {
	Config() *forwarding.Instance
	// Table is the published table (after Publish, the new one).
	Table() *forwarding.Table
	// DIPs is the pool: every server id with a DIP record.
	DIPs() map[forwarding.ServerID]Server
	// Logger is the controller's logger with the instance's name.
	Logger() *slog.Logger
	// Publish publishes d as the instance's next generation now, in the
	// middle of planning one (Prism announces the bins about to move).
	Publish(ctx context.Context, d *forwarding.Delta) error
	// WriteConfig stores cfg as the instance's record and uses it from
	// then on (Cheetah switches its key ids).
	WriteConfig(ctx context.Context, cfg *forwarding.Instance) error
}

// StateMaker is a strategy with state of its own in each controller.
type StateMaker interface {
	NewState() any
}

// Finisher is a strategy with work after its generation is published
// (Prism: Algorithm 1's final round); a non-nil delta is published next.
type Finisher interface {
	Finish(ctx context.Context, c Ctl, in Instance) (*forwarding.Delta, error)
}

// Gater is a strategy that may hold a live server back from new
// connections (planned as down, weight 0) while t is its table.
type Gater interface {
	Held(c Ctl, in Instance, t *forwarding.Table, id forwarding.ServerID) bool
}

// SlotHolder is a strategy that keeps a removed server in the table
// (retired) past its window while it still has connections (Cheetah: the
// cookies name its slot).
type SlotHolder interface {
	HoldsSlot(c Ctl, in Instance, id forwarding.ServerID) bool
}

// ExtraState is a strategy with state of its own in the table (Cheetah's
// keys and loads): it adds to d what differs from t.
type ExtraState interface {
	ExtraState(c Ctl, in Instance, t *forwarding.Table, d *forwarding.Delta)
}

// Ticker is a strategy with work on the controller's loop every second
// (Cheetah: due key switches, keys pushed to the agents).
type Ticker interface {
	Tick(ctx context.Context, c Ctl) error
}

// KeyRotation is what a key rotation asks (`ctl cheetah rotate-key`).
type KeyRotation struct {
	// Settle is how long muxes get to load the new key before servers use
	// it: longer than a mux may lag without being withdrawn from BGP
	// (muxd's WithdrawBehindAfter, 30 s by default).
	Settle time.Duration `json:"settle"`
	// MinAge refuses a rotation when the current key became current less
	// than MinAge ago: the rotation overwrites the other slot, whose key
	// the connections opened before that switch still carry.
	MinAge time.Duration `json:"min_age"`
	// Force skips MinAge and the check that every active server's agent
	// confirmed the current keys.
	Force bool `json:"force,omitempty"`
}

// KeyRotator is a strategy whose instances hold keys an operator rotates
// (Cheetah's cookie keys); it reports what it did.
type KeyRotator interface {
	RotateKey(ctx context.Context, c Ctl, in Instance, r KeyRotation) (string, error)
}

// ErrBadRequest marks a request the strategy refuses; the message says
// what exactly is wrong (the controller's ErrBadRequest).
var ErrBadRequest = errors.New("bad request")

// BadRequest is an ErrBadRequest with its reason.
func BadRequest(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, a...))
}
