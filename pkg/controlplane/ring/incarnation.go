package ring

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Incarnations are 32-bit Unix seconds: the mux's option and GUE data carry
// them in 32 bits (docs/wire-format.md) and agents compare
// incarnation<<32 | generation, so they are not widened. Instead they are
// bounded by the clock (docs/control-plane.md, "Incarnation rules"):
//
//   - a controller begins an incarnation at max(now, highest trusted + 1)
//     and never one more than MaxIncarnationLead ahead of its clock (nor
//     past 2^32−1): it refuses instead, and retries once the clock has
//     caught up;
//   - an incarnation read from the store (a pointer, an object header)
//     more than MaxIncarnationLead ahead of the controller's clock is
//     damage: reported, repaired from the controller's own last state,
//     never taken as the floor of the next incarnation;
//   - a mux adopts no incarnation more than FollowerIncarnationLead ahead
//     of its own clock: twice the controller's bound, so that everything a
//     controller publishes is adopted by muxes whose clock lags its own by
//     up to MaxIncarnationLead.
const (
	// MaxIncarnationLead is how far an incarnation may lead the
	// controller's clock: the agents' default clock skew bound
	// (dataplane.DefaultMaxClockSkew), beyond which they do not remember
	// an incarnation either.
	MaxIncarnationLead = time.Minute
	// FollowerIncarnationLead is how far an incarnation may lead a mux's
	// clock for the mux to load it.
	FollowerIncarnationLead = 2 * MaxIncarnationLead
)

// ErrIncarnationAhead: an incarnation beyond the clock plus its bound,
// read from the store (damage) or about to be published (refused).
var ErrIncarnationAhead = errors.New("ring: incarnation ahead of the clock")

// unixClock is now in Unix seconds, at least 1 (incarnation 0 is the
// "nothing yet" of the agents).
func unixClock(now time.Time) int64 { return max(now.Unix(), 1) }

// incarnationTrusted says whether inc is within lead of now.
func incarnationTrusted(inc uint32, now time.Time, lead time.Duration) bool {
	return int64(inc) <= unixClock(now)+int64(lead/time.Second)
}

// nextIncarnation is the incarnation a new start takes: the clock's Unix
// seconds, or one more than the highest incarnation known (trusted: the
// caller has dropped what is beyond the bound) if the clock is behind it,
// so incarnations of an instance only grow. It never wraps: an incarnation
// that would lead the clock by more than MaxIncarnationLead, or not fit 32
// bits, is an error (ErrIncarnationAhead) and nothing is published.
func nextIncarnation(now time.Time, known uint32) (uint32, error) {
	clock := unixClock(now)
	limit := clock + int64(MaxIncarnationLead/time.Second)
	n := max(clock, int64(known)+1)
	switch {
	case limit > math.MaxUint32:
		return 0, fmt.Errorf("%w: the clock (%s) is past what a 32-bit incarnation can count", ErrIncarnationAhead, now.UTC().Format(time.RFC3339))
	case n > limit:
		return 0, fmt.Errorf("%w: the next incarnation would be %d, %d s ahead of this controller's clock (bound %v), "+
			"above incarnation %d, published by this controller or found in the store within the bound; "+
			"nothing published, retried as the clock advances (is the clock right?)",
			ErrIncarnationAhead, n, n-clock, MaxIncarnationLead, known)
	}
	return uint32(n), nil
}
