package forwarding

import (
	"fmt"
	"time"
)

// AWFD bounds (pkg/strategy/awfd/classes has the same class bounds; forwarding cannot import
// it). A poll faster than 50 ms would poll agents faster than they sample
// (agentapi.SampleEvery); slower than 10 s is no longer adaptive.
const (
	DefaultAWFDClasses = 4
	MaxAWFDClasses     = 16
	DefaultAWFDPoll    = 250 * time.Millisecond
	MinAWFDPoll        = 50 * time.Millisecond
	MaxAWFDPoll        = 10 * time.Second
)

// AWFD: the instance's Buckets array is its Maglev table (prime size), the
// equal-share fallback muxes use before the first class record and while no
// server reports capacity; the class record (pkg/strategy/awfd/classes) lives outside the
// ring. Muxes keep connection tables (PCC), as Maglev's.
func init() {
	RegisterStrategy(StrategySpec{Name: StrategyAWFD, Check: checkAWFD, MaglevTable: true, ConnTable: true,
		HasOptions: func(in *Instance) bool { return in.AWFD != nil },
		FillDefaults: func(in *Instance) {
			o := in.AWFDConfig()
			in.AWFD = &o
		}})
}

// AWFDOptions are the awfd strategy's own settings (issue 14), json "awfd"
// in the instance configuration, validated by checkAWFD.
type AWFDOptions struct {
	// Classes is m, the number of priority classes (default 4).
	Classes int `json:"classes,omitempty" yaml:"classes,omitempty"`
	// Poll is the interval between capacity polls (default 250 ms).
	Poll time.Duration `json:"poll,omitempty" yaml:"poll,omitempty"`
	// Hold is how long a server's last capacity is kept when its agent
	// does not answer (default 3 polls); past it the value halves every
	// poll interval.
	Hold time.Duration `json:"hold,omitempty" yaml:"hold,omitempty"`
}

// AWFD is the instance's AWFD options with defaults filled in.
func (in *Instance) AWFDConfig() AWFDOptions {
	var o AWFDOptions
	if in.AWFD != nil {
		o = *in.AWFD
	}
	if o.Classes == 0 {
		o.Classes = DefaultAWFDClasses
	}
	if o.Poll == 0 {
		o.Poll = DefaultAWFDPoll
	}
	if o.Hold == 0 {
		o.Hold = 3 * o.Poll
	}
	return o
}

// checkAWFD validates an AWFD instance's options: its table is a Maglev
// table (prime size), m and the poll interval within bounds.
func checkAWFD(in *Instance) error {
	if err := checkPrimeSize(in.Buckets, fmt.Sprintf("awfd table size %d is not prime (awfd builds a Maglev table, which needs a prime size)", in.Buckets)); err != nil {
		return err
	}
	if in.AWFD == nil {
		return nil
	}
	o := *in.AWFD
	if o.Classes < 0 || o.Classes > MaxAWFDClasses {
		return fmt.Errorf("awfd classes %d must be in 1–%d (0 = default %d)", o.Classes, MaxAWFDClasses, DefaultAWFDClasses)
	}
	if o.Poll != 0 && (o.Poll < MinAWFDPoll || o.Poll > MaxAWFDPoll) {
		return fmt.Errorf("awfd poll %v must be in %v–%v", o.Poll, MinAWFDPoll, MaxAWFDPoll)
	}
	if o.Hold < 0 || o.Hold > time.Hour {
		return fmt.Errorf("awfd hold %v must be in 0–1h", o.Hold)
	}
	return nil
}
