package lab

import "time"

// awfdStrategy: its fallback is a Maglev table (prime size), its agents
// chain nothing (PCC is the muxes' connection tables), and they report
// capacity (GET /v1/capacity): against the tbf rate the AWFD experiment
// shapes them with, else the nominal rate the lab gives every agent
// (Options.ServerRates, agentNominalBps).
type awfdStrategy struct{ maglevStrategy }

func init() { registerStrategy(awfdStrategy{}) }

func (awfdStrategy) Name() string                            { return "awfd" }
func (awfdStrategy) AgentWindow(time.Duration) time.Duration { return 0 }
func (awfdStrategy) decisionCounters() string                { return "beamer_mux_awfd_packets_total" }
