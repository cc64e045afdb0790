package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
)

// `beamer ctl` does not write instance data itself: only the elected
// controller does. It puts a Request under ROOT/controller/requests, rings
// the doorbell key the controller watches, and waits for the controller to
// mark the request done or failed. A request survives a controller crash:
// the next leader finds it "running" and runs it again (operations are
// idempotent for that reason).

// Request operations.
const (
	OpCreateInstance = "create-instance"
	OpDeleteInstance = "delete-instance"
	OpAddDIP         = "add-dip"
	OpRemoveDIP      = "remove-dip"
	OpSetWeight      = "set-weight"
	OpDrain          = "drain"
	OpUndrain        = "undrain"
	OpDefrag         = "defrag"
	OpHealthClear    = "health-clear"
	OpCheetahRotate  = "cheetah-rotate-key"
)

// Request statuses.
const (
	StatusPending = "pending"
	StatusRunning = "running"
	StatusDone    = "done"
	StatusFailed  = "failed"
)

// Request is one `beamer ctl` operation.
type Request struct {
	Op       string                `json:"op"`
	Instance string                `json:"instance"`
	Config   *forwarding.Instance  `json:"config,omitempty"`
	ID       forwarding.ServerID   `json:"id,omitempty"`
	IDs      []forwarding.ServerID `json:"ids,omitempty"`  // remove-dip of several DIPs at once
	DIPs     []NewDIP              `json:"dips,omitempty"` // add-dip of several DIPs at once
	Addr     netip.Addr            `json:"addr,omitzero"`
	Weight   uint32                `json:"weight,omitempty"`
	// Defrag: steps to run now, with these parameters.
	Steps  int                  `json:"steps,omitempty"`
	Defrag *assign.DefragParams `json:"defrag,omitempty"`
	// Rotation: cheetah-rotate-key's parameters.
	Rotation *ctlstrategy.KeyRotation `json:"rotation,omitempty"`
	Status   string                   `json:"status"`
	Error    string                   `json:"error,omitempty"`
	// LastError is why the latest attempt of a running request failed
	// (store trouble); the controller retries it.
	LastError string `json:"last_error,omitempty"`
	// Result is what a successful operation reports (defrag: its figures).
	Result    string    `json:"result,omitempty"`
	Submitted time.Time `json:"submitted"`
	// Parts: the DIP or id lists are in this many parts under the
	// request's key (request_parts.go), the request being too large for
	// one store value.
	Parts int `json:"parts,omitempty"`
}

func requestsKey(root string) string { return root + "/controller/requests" }
func doorbellKey(root string) string { return root + "/controller/doorbell" }

// ElectionKey is where controllers campaign.
func ElectionKey(root string) string { return root + "/controller/leader" }

// ErrNoController: no controller picked a request up in time.
var ErrNoController = errors.New("no controller answered")

// ErrNotFinished: a controller took a request but did not finish it in time.
var ErrNotFinished = errors.New("request not finished")

// ErrOutcomeUnknown: the request was submitted, but whether it was made
// could not be learnt (the store failed while its outcome was awaited): a
// controller may still run it. Never reported as a failure.
var ErrOutcomeUnknown = errors.New("outcome unknown")

// Submit hands a request to the elected controller and waits up to timeout
// for its outcome. The returned error is the controller's verdict (its
// text says what was wrong) or says why there was none.
func Submit(ctx context.Context, st store.Store, root string, r Request, timeout time.Duration) error {
	_, err := SubmitResult(ctx, st, root, r, timeout)
	return err
}

// SubmitResult is Submit returning what the operation reported.
func SubmitResult(ctx context.Context, st store.Store, root string, r Request, timeout time.Duration) (string, error) {
	r.Status, r.Submitted = StatusPending, time.Now().UTC()
	key := fmt.Sprintf("%s/%019d-%08x", requestsKey(root), r.Submitted.UnixNano(), rand.Uint32())
	b, err := writeParts(ctx, st, key, &r)
	if err != nil {
		return "", err
	}
	if err := st.Commit(ctx, store.IfAbsent(key), store.Put(key, b), store.Put(doorbellKey(root), []byte(key))); err != nil {
		return "", fmt.Errorf("submit request: %w", err)
	}
	deadline := time.Now().Add(timeout)
	for {
		// From here on the request is in the store: a controller may run
		// it whatever happens to this wait, so a failure to read its
		// outcome is not a failure of the request (ErrOutcomeUnknown).
		it, err := st.Get(ctx, key)
		if err != nil {
			return "", fmt.Errorf("%w: request %s was submitted, and its outcome could not be read: %v", ErrOutcomeUnknown, key, err)
		}
		var got Request
		if err := json.Unmarshal(it.Value, &got); err != nil {
			return "", fmt.Errorf("%w: request %s was submitted, and its outcome could not be read: %v", ErrOutcomeUnknown, key, err)
		}
		switch got.Status {
		case StatusDone:
			return got.Result, deleteRequest(ctx, st, key)
		case StatusFailed:
			deleteRequest(ctx, st, key)
			return "", errors.New(got.Error)
		}
		if time.Now().After(deadline) {
			if got.Status == StatusPending {
				// Withdraw it unless the controller took it meanwhile.
				if err := st.Commit(ctx, store.IfVersion(key, it.Version), store.Delete(key)); err == nil {
					store.DeleteTree(ctx, st, key) // its parts, if any
					return "", fmt.Errorf("%w within %v: %s", ErrNoController, timeout, notPickedUp(ctx, st, root))
				}
				continue
			}
			return "", fmt.Errorf("%w within %v: %s", ErrNotFinished, timeout, stillRunning(ctx, st, root, got))
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// notPickedUp says, truthfully, why nobody took a request.
func notPickedUp(ctx context.Context, st store.Store, root string) string {
	leader, err := st.Leader(ctx, ElectionKey(root))
	switch {
	case err == nil:
		return fmt.Sprintf("controller %q is elected but did not pick the request up", leader)
	case errors.Is(err, store.ErrNotFound):
		return "no controller is elected on this store (start `beamer controller`; one that lost its leadership in a store outage is elected again within seconds of the store's return)"
	}
	return fmt.Sprintf("the store could not say which controller is elected: %v", err)
}

// stillRunning says, truthfully, where a request taken by a controller is.
func stillRunning(ctx context.Context, st store.Store, root string, r Request) string {
	leader, err := st.Leader(ctx, ElectionKey(root))
	switch {
	case err == nil && r.LastError != "":
		return fmt.Sprintf("controller %q took the request and is retrying it; its last attempt failed: %s", leader, r.LastError)
	case err == nil:
		return fmt.Sprintf("controller %q took the request and is still working on it; check with `beamer ctl show`", leader)
	case errors.Is(err, store.ErrNotFound):
		return "a controller took the request but none is elected now; the next elected controller runs it again"
	}
	return fmt.Sprintf("a controller took the request; the store could not say which controller is elected now: %v", err)
}

// noteAttempt records in a running request why its attempt failed, so that
// ctl can say it; best effort (the store may be what failed).
func (c *Controller) noteAttempt(ctx context.Context, key string, r *Request, opErr error) {
	cur, err := c.st.Get(ctx, key)
	if err != nil {
		return
	}
	msg := opErr.Error()
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	r.LastError = c.now().UTC().Format(time.RFC3339) + ": " + msg
	c.putRequest(ctx, key, cur.Version, r)
}

// finishedTTL: finished requests whose submitter went away are deleted
// after this long.
const finishedTTL = 10 * time.Minute

// serveRequests runs every open request, oldest first. A store error that
// is not about the request itself (lost leadership, store down) stops it
// and leaves the request for the next attempt.
func (c *Controller) serveRequests(ctx context.Context) error {
	names, err := c.st.Children(ctx, requestsKey(c.root))
	if err != nil {
		return err
	}
	for _, n := range names {
		key := requestsKey(c.root) + "/" + n
		it, err := c.st.Get(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			if staleOrphan(n, c.now()) { // parts of a request never written
				if err := store.DeleteTree(ctx, c.st, key); err != nil {
					return err
				}
			}
			continue
		}
		if err != nil {
			return err
		}
		var r Request
		if err := json.Unmarshal(it.Value, &r); err != nil {
			if err := deleteRequest(ctx, c.st, key); err != nil {
				return err
			}
			continue
		}
		switch r.Status {
		case StatusDone, StatusFailed:
			if c.now().Sub(r.Submitted) > finishedTTL {
				if err := deleteRequest(ctx, c.st, key); err != nil {
					return err
				}
			}
			continue
		}
		resumed := r.Status == StatusRunning
		r.Status = StatusRunning
		if err := c.putRequest(ctx, key, it.Version, &r); err != nil {
			if errors.Is(err, store.ErrConflict) && !c.leading(ctx) {
				return err
			}
			continue // withdrawn by ctl meanwhile
		}
		opErr := readParts(ctx, c.st, key, &r)
		var result string
		if opErr == nil {
			result, opErr = c.execute(ctx, &r)
		}
		if resumed && errors.Is(opErr, ErrNotFound) && (r.Op == OpRemoveDIP || r.Op == OpDeleteInstance) {
			opErr = nil // done before the crash that interrupted it
		}
		if opErr != nil && !errors.Is(opErr, ErrBadRequest) && !errors.Is(opErr, ErrNotFound) {
			c.noteAttempt(ctx, key, &r, opErr)
			c.metrics.observeRequest(r.Op, "retried")
			return opErr // store trouble: leave it running for a retry
		}
		r.Status, r.Result = StatusDone, result
		if opErr != nil {
			r.Status, r.Error = StatusFailed, opErr.Error()
		}
		c.metrics.observeRequest(r.Op, string(r.Status))
		c.logRequest(&r, opErr)
		cur, err := c.st.Get(ctx, key)
		if err != nil {
			continue // withdrawn
		}
		if err := c.putRequest(ctx, key, cur.Version, &r); err != nil && !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return nil
}

// logRequest reports a finished request: done at Info, refused at Warn.
// Only what names the change is logged — never the instance config, which
// holds Cheetah keys.
func (c *Controller) logRequest(r *Request, opErr error) {
	args := []any{"op", r.Op, "instance", r.Instance}
	if r.ID != 0 {
		args = append(args, "server", r.ID)
	}
	if r.Addr.IsValid() {
		args = append(args, "dip", r.Addr)
	}
	if r.Weight != 0 {
		args = append(args, "weight", r.Weight)
	}
	if n := len(r.DIPs) + len(r.IDs); n > 0 {
		args = append(args, "servers", n)
	}
	if opErr != nil {
		c.log.Warn("request refused", append(args, "reason", opErr)...)
		return
	}
	c.log.Info("request done", args...)
}

// leading tells whether a conflict came from our fence.
func (c *Controller) leading(ctx context.Context) bool {
	err := c.st.Commit(ctx)
	return err == nil
}

func (c *Controller) putRequest(ctx context.Context, key string, version int64, r *Request) error {
	b, err := json.Marshal(headOf(r))
	if err != nil {
		return err
	}
	return c.st.Commit(ctx, store.IfVersion(key, version), store.Put(key, b))
}

func (c *Controller) execute(ctx context.Context, r *Request) (string, error) {
	switch r.Op {
	case OpCreateInstance:
		if r.Config == nil {
			return "", badf("create-instance without a configuration")
		}
		return "", c.CreateInstance(ctx, r.Config)
	case OpDeleteInstance:
		return "", c.DeleteInstance(ctx, r.Instance)
	case OpAddDIP:
		if len(r.DIPs) > 0 {
			return "", c.AddDIPs(ctx, r.Instance, r.DIPs)
		}
		return "", c.AddDIP(ctx, r.Instance, r.ID, r.Addr, r.Weight)
	case OpRemoveDIP:
		if len(r.IDs) > 0 {
			return "", c.RemoveDIPs(ctx, r.Instance, r.IDs)
		}
		return "", c.RemoveDIP(ctx, r.Instance, r.ID)
	case OpSetWeight:
		return "", c.SetWeight(ctx, r.Instance, r.ID, r.Weight)
	case OpDrain:
		return "", c.Drain(ctx, r.Instance, r.ID, true)
	case OpUndrain:
		return "", c.Drain(ctx, r.Instance, r.ID, false)
	case OpHealthClear:
		return "", c.ClearDamping(ctx, r.Instance, r.ID)
	case OpCheetahRotate:
		if r.Rotation == nil {
			return "", badf("cheetah-rotate-key without parameters")
		}
		return c.RotateKey(ctx, r.Instance, *r.Rotation)
	case OpDefrag:
		if r.Defrag == nil {
			return "", badf("defrag without parameters")
		}
		res, err := c.Defrag(ctx, r.Instance, r.Steps, *r.Defrag)
		if err != nil {
			return "", err
		}
		return res.String(), nil
	}
	return "", badf("unknown operation %q", r.Op)
}
