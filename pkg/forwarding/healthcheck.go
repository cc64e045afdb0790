package forwarding

import (
	"fmt"
	"strings"
)

// HealthKind names how the controller probes the servers of an instance.
type HealthKind string

const (
	// HealthAgent (default): the controller asks the server's agent
	// (GET DIP:agent_port/v1/health) to connect to VIP:port on the server.
	// The VIP is on the server's loopback, so a service bound only to the
	// VIP — the usual direct-server-return setup — is probed as clients
	// reach it.
	HealthAgent HealthKind = "agent"
	// HealthTCP: the controller connects to DIP:port itself. Only for
	// services that also listen on the DIP.
	HealthTCP HealthKind = "tcp"
	// HealthHTTP: the controller sends GET http://DIP:port/path and wants
	// a 2xx answer (a status endpoint the service offers on the DIP).
	HealthHTTP HealthKind = "http"
	// HealthNone: servers are never probed; they are up from the moment
	// they are added.
	HealthNone HealthKind = "none"
)

// DefaultAgentPort is where agents serve their API (agentapi.DefaultPort).
const DefaultAgentPort = 9300

// HealthCheck configures the probe of an instance's servers.
type HealthCheck struct {
	Kind HealthKind `json:"kind,omitempty" yaml:"kind,omitempty"` // default agent
	// Port probed: VIP:port through the agent, DIP:port for tcp and http.
	// Default: the instance's first service port.
	Port uint16 `json:"port,omitempty" yaml:"port,omitempty"`
	// Path of the http probe, default "/".
	Path string `json:"path,omitempty" yaml:"path,omitempty"`
	// AgentPort is the port of the agent API on every server (default 9300).
	AgentPort uint16 `json:"agent_port,omitempty" yaml:"agent_port,omitempty"`
}

// HealthProbe is an instance's probe with its defaults filled in.
func (in *Instance) HealthProbe() HealthCheck {
	var h HealthCheck
	if in.Health != nil {
		h = *in.Health
	}
	if h.Kind == "" {
		h.Kind = HealthAgent
	}
	if h.Port == 0 {
		h.Port = in.FirstTCPPort()
	}
	if h.Kind == HealthHTTP && h.Path == "" {
		h.Path = "/"
	}
	if h.AgentPort == 0 {
		h.AgentPort = DefaultAgentPort
	}
	return h
}

// Check says what is wrong with a health check configuration.
func (h *HealthCheck) Check() error {
	if h == nil {
		return nil
	}
	switch h.Kind {
	case "", HealthAgent, HealthTCP, HealthHTTP, HealthNone:
	default:
		return fmt.Errorf("health kind %q is none of %s, %s, %s, %s", h.Kind, HealthAgent, HealthTCP, HealthHTTP, HealthNone)
	}
	if h.Path != "" {
		if h.Kind != HealthHTTP {
			return fmt.Errorf("health path %q is only for the %s probe", h.Path, HealthHTTP)
		}
		if !strings.HasPrefix(h.Path, "/") || len(h.Path) > 256 || strings.ContainsFunc(h.Path, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return fmt.Errorf("health path %q must start with / and be at most 256 printable characters without spaces", h.Path)
		}
	}
	if h.Kind == HealthNone && (h.Port != 0 || h.AgentPort != 0) {
		return fmt.Errorf("health kind %s takes no port", HealthNone)
	}
	return nil
}
