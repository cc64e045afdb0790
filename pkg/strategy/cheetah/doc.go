// Package cheetah is the Cheetah strategy's own code on the Go side: its
// controller side (key push and loads, held servers, key rotation;
// ctlstrategy), its mux loader side (the instance's record of keys, policy
// and picks, muxspi), its reference-model decision (modelspi), its
// section of the ring's payloads (keys and loads, ringspi) and its server
// agent sides: the keys per VIP pinned across restarts, the cookie writer
// on egress, its counters and `agent inspect` part (agentspi, agent.go,
// agent_inspect.go) and the daemon's keys at start and from the
// controller's pushes (agentdspi, agent_daemon.go, agent_api.go),
// registered in init(); its cookie is cookie.
package cheetah
