package controller

import (
	"fmt"
	"math"
	"time"
)

// HealthRecord is the health state of a DIP kept in its record, so that
// `ctl show` can print it and a new controller resumes flap damping where
// the last one was. The checker writes it only when something in it
// changes (a state change, a new error text, damping), not every probe.
type HealthRecord struct {
	// Pending: added while health checks run and not yet probed
	// successfully; it owns no bucket until then.
	Pending bool `json:"pending,omitempty"`
	// Reason of the latest change of Down or Pending (the probe's error, or
	// what made it up).
	Reason string `json:"health_reason,omitempty"`
	// Penalty of flap damping at PenaltyAt; it halves every half-life.
	Penalty   float64   `json:"penalty,omitempty"`
	PenaltyAt time.Time `json:"penalty_at,omitzero"`
	// Suppressed: flapping; kept down until the penalty decays below Reuse
	// or an operator clears it (`ctl health clear`).
	Suppressed bool `json:"suppressed,omitempty"`
	// LastError is the latest probe failure's text and time.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	// Unreachable: the latest failed probe did not reach the server at all
	// (its agent did not answer, a connect timed out), so it may be dead;
	// false when the server answered and only its service failed. A down
	// server that may be dead is chained to after the down ones that still
	// answer (forwarding.HistoryRules.Dead).
	Unreachable bool `json:"unreachable,omitempty"`
}

// PenaltyNow is the damping penalty decayed to now.
func (r *HealthRecord) PenaltyNow(now time.Time, halfLife time.Duration) float64 {
	if r.Penalty == 0 || r.PenaltyAt.IsZero() || halfLife <= 0 {
		return r.Penalty
	}
	return r.Penalty * math.Pow(0.5, now.Sub(r.PenaltyAt).Seconds()/halfLife.Seconds())
}

// streak counts consecutive probe results of one DIP (controller memory).
type streak struct{ successes, failures int }

// healthStep feeds one probe result (err nil = success) of DIP d into the
// state machine and returns the DIP's new record; what tells what changed
// for the log ("" if the state did not change).
//
//	pending --first success--> up
//	up --Fall failures--> down (penalty +1; suppressed if ≥ Suppress)
//	down --Rise successes, not suppressed--> up
//	suppressed --penalty decays below Reuse, or operator clear--> not suppressed
func healthStep(d DIP, s *streak, err error, now time.Time, o *HealthOptions) (nd DIP, what string) {
	nd = d
	r := &nd.HealthRecord
	if err == nil {
		s.successes++
		s.failures = 0
		r.Unreachable = false
	} else {
		s.failures++
		s.successes = 0
		r.Unreachable = !serverAnswered(err)
		// Recorded at the start of a failure streak and when the DIP goes
		// down, not at every failure: error texts can carry ephemeral
		// ports, and every change of the record is a store write.
		if s.failures == 1 {
			r.LastError, r.LastErrorAt = err.Error(), now
		}
	}
	pen := r.PenaltyNow(now, o.HalfLife)
	if r.Suppressed && pen < o.Reuse {
		r.Suppressed = false
		what = fmt.Sprintf("damping over (penalty %.2f < %.2f)", pen, o.Reuse)
	}
	change := func(down, pending bool, reason string) {
		nd.Down, r.Pending, r.Reason = down, pending, reason
		nd.HealthChanged = now.UTC().Truncate(time.Second)
		what = reason
	}
	switch {
	case r.Pending:
		if err == nil {
			change(false, false, "up: first probe succeeded")
		}
	case !d.Down && s.failures >= o.Fall:
		r.LastError, r.LastErrorAt = err.Error(), now
		r.Penalty, r.PenaltyAt = pen+1, now
		reason := fmt.Sprintf("down: %d probes failed: %s", s.failures, r.LastError)
		if r.Penalty >= o.Suppress {
			r.Suppressed = true
			reason += fmt.Sprintf("; flapping, suppressed (penalty %.2f ≥ %.2f)", r.Penalty, o.Suppress)
		}
		change(true, false, reason)
	case d.Down && s.successes >= o.Rise && !r.Suppressed:
		change(false, false, fmt.Sprintf("up: %d probes succeeded", s.successes))
	}
	return nd, what
}
