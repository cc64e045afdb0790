// Package cheetah is the Cheetah strategy's own code on the Go side: its
// mux loader side (the instance's record of keys, policy and picks,
// muxspi), its reference-model decision (modelspi), and its server agent
// sides: the keys per VIP pinned across restarts, the cookie writer on
// egress, its counters and `agent inspect` part (agentspi, agent.go) and
// the daemon's keys at start and from the controller's pushes
// (agentdspi, agent_daemon.go, agent_api.go), registered in init(); its
// cookie is cookie. Its controller and ring payload sides are still files
// of those layers (docs/architecture.md, "A new strategy").
package cheetah
