package forwarding

import (
	"strings"
	"testing"
)

func TestHealthCheckValidation(t *testing.T) {
	for _, c := range []struct {
		h    HealthCheck
		want string // "" = valid
	}{
		{HealthCheck{}, ""},
		{HealthCheck{Kind: HealthAgent, Port: 8080, AgentPort: 9400}, ""},
		{HealthCheck{Kind: HealthTCP, Port: 22}, ""},
		{HealthCheck{Kind: HealthHTTP, Port: 8080, Path: "/healthz?x=1"}, ""},
		{HealthCheck{Kind: HealthNone}, ""},
		{HealthCheck{Kind: "icmp"}, "none of"},
		{HealthCheck{Kind: HealthTCP, Path: "/x"}, "only for the http probe"},
		{HealthCheck{Kind: HealthHTTP, Path: "healthz"}, "must start with /"},
		{HealthCheck{Kind: HealthHTTP, Path: "/a b"}, "must start with /"},
		{HealthCheck{Kind: HealthHTTP, Path: "/" + strings.Repeat("a", 300)}, "256"},
		{HealthCheck{Kind: HealthNone, Port: 80}, "takes no port"},
	} {
		err := c.h.Check()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.h, err, c.want)
		}
	}
	in := Instance{PortLow: 443}
	if h := in.HealthProbe(); h.Kind != HealthAgent || h.Port != 443 || h.AgentPort != DefaultAgentPort {
		t.Errorf("defaults: %+v", h)
	}
	in.Health = &HealthCheck{Kind: HealthHTTP}
	if h := in.HealthProbe(); h.Path != "/" || h.Port != 443 {
		t.Errorf("http defaults: %+v", h)
	}
}
