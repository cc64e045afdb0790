package beamercli

import (
	"fmt"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/spf13/cobra"
)

// awfdCreateFlags are the awfd strategy's options of `ctl create`:
// --classes M, --poll INTERVAL, --hold DURATION.
type awfdCreateFlags struct{}

func addAWFDCreateFlags(create *cobra.Command) awfdCreateFlags {
	f := create.Flags()
	f.Int("classes", forwarding.DefaultAWFDClasses, fmt.Sprintf("awfd: m, the number of priority classes capacity is quantised into, 1–%d", forwarding.MaxAWFDClasses))
	f.Duration("poll", forwarding.DefaultAWFDPoll, fmt.Sprintf("awfd: interval between capacity polls of the servers' agents, %v–%v", forwarding.MinAWFDPoll, forwarding.MaxAWFDPoll))
	f.Duration("hold", 0, "awfd: how long a server's last capacity is kept when its agent does not answer, then halved every poll (default 3 polls)")
	return awfdCreateFlags{}
}

func (awfdCreateFlags) refuse(cmd *cobra.Command, _ *forwarding.Instance) error {
	if f := cmd.Flags(); f.Changed("classes") || f.Changed("poll") || f.Changed("hold") {
		return fmt.Errorf("--classes, --poll and --hold are options of --strategy %s", forwarding.StrategyAWFD)
	}
	return nil
}

func (awfdCreateFlags) apply(cmd *cobra.Command, in *forwarding.Instance) error {
	f := cmd.Flags()
	m, _ := f.GetInt("classes")
	poll, _ := f.GetDuration("poll")
	hold, _ := f.GetDuration("hold")
	if m < 1 {
		return fmt.Errorf("--classes %d: want 1–%d", m, forwarding.MaxAWFDClasses)
	}
	in.AWFD = &forwarding.AWFDOptions{Classes: m, Poll: poll, Hold: hold}
	return nil
}
