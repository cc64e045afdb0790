package forwarding

import (
	"fmt"
	"time"
)

// MaxChainWindow is the longest chaining window: agents refuse a longer one
// (their program keeps the window in seconds beside a clock-skew bound of
// the same size), so `ctl create` and agent configurations refuse it too,
// rather than leave a server pending forever on a window its agent cannot
// take.
const MaxChainWindow = 24 * time.Hour

// CheckChainWindow says why d is no chaining window, if it is not one.
func CheckChainWindow(d time.Duration) error {
	if d < 0 || d > MaxChainWindow {
		return fmt.Errorf("chain window %v must be within 0–%v (agents refuse a longer one)", d, MaxChainWindow)
	}
	return nil
}
