package dataplane

import (
	"net/netip"
	"testing"
)

// TestAgentVIPIsOwnAddress: a VIP equal to the server's address is refused
// also when that address came from the interface (after the configuration
// file or flags were checked).
func TestAgentVIPIsOwnAddress(t *testing.T) {
	ip := netip.MustParseAddr
	opts := AgentOptions{Addr: ip("198.18.0.10"), Addr6: ip("2001:db8::10")}
	for _, v := range []string{"198.18.0.10", "2001:db8::10"} {
		if err := checkAgentVIP(ip(v), opts, false); err == nil {
			t.Errorf("VIP %s = the server's address accepted", v)
		}
	}
	if err := checkAgentVIP(ip("198.18.100.1"), opts, false); err != nil {
		t.Errorf("a VIP of its own: %v", err)
	}
}
