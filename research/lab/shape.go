package lab

import (
	"fmt"
	"strconv"
)

// agentNominalBps is the link rate the lab's agents report capacity
// against when their link is not shaped: the veths have no rate of their
// own, and an AWFD instance needs one (pkg/node/agentapi capacity.go).
const agentNominalBps = 1e9

// shapeServer gives server i its rate of Options.ServerRates with a tbf
// root qdisc on its interface (egress: the downloads it sends), which its
// agent reads as the link's capacity. Burst: 10 ms at the rate, at least
// 32 KB; latency 100 ms of queue before tbf drops.
func (l *Lab) shapeServer(i int, s *serverNode) error {
	if len(l.opts.ServerRates) == 0 {
		return nil
	}
	rate := l.opts.ServerRates[i%len(l.opts.ServerRates)]
	burst := max(int(rate/8/100), 32<<10)
	out, err := s.ns.Run("tc", "qdisc", "replace", "dev", "eth0", "root", "tbf",
		"rate", strconv.FormatFloat(rate, 'f', 0, 64)+"bit", "burst", strconv.Itoa(burst), "latency", "100ms")
	if err != nil {
		return fmt.Errorf("shaping server %d to %.0f bit/s: %v: %s", i, rate, err, out)
	}
	return nil
}
