package partition

import (
	"errors"
	"testing"
)

// TestOutcomeOfCtlErrors: how ctl's errors are classified, the command
// line netlab puts before them ignored.
func TestOutcomeOfCtlErrors(t *testing.T) {
	for msg, unknown := range map[string]bool{
		"beamer ctl set-weight web 1 2 --timeout 5s in ns: exit status 1: beamer: not found: instance \"web\" has no DIP":                                                   false,
		"beamer ctl x --timeout 5s in ns: exit status 1: beamer: no controller answered within 1s: controller \"ctl2\" is elected but did not pick the request up":          false,
		"beamer ctl x in ns: exit status 1: beamer: request not finished within 5s: a controller took the request":                                                          true,
		"beamer ctl x in ns: exit status 1: beamer: stream terminated by RST_STREAM with error code: CANCEL":                                                                true,
		"beamer ctl x in ns: exit status 1: beamer: rpc error: code = Unavailable desc = connection refused":                                                                true,
		"beamer ctl x in ns: exit status 1: beamer: context deadline exceeded":                                                                                              true,
		"beamer ctl x in ns: exit status 1: beamer: outcome unknown: the call to 198.18.0.250:9400 broke after the change was sent (EOF): it may or may not have been made": true,
	} {
		if got := unknownOutcome(errors.New(msg)); got != unknown {
			t.Errorf("%q: unknown=%v, want %v", msg, got, unknown)
		}
	}
}
