package controller

import (
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// An instance whose MPTCP server-id range leaves room for a TCP service
// on 8443 refuses a DIP whose id is outside the range (its subflows would
// be dropped) and takes one inside it.
func TestServerIDRange(t *testing.T) {
	in := webInstance(64)
	in.Services = []forwarding.Service{{Protocol: forwarding.TCP, Ports: forwarding.PortList{{Low: 8443, High: 8443}}}}
	in.ServerIDRange = &forwarding.ServerIDRange{PortRange: forwarding.PortRange{Low: 1025, High: 2047}}
	c, root, _ := setupInstance(t, in, 1, 1, 1)
	ctx := storetest.Context(t)
	checkInvariants(t, root)
	if err := c.AddDIP(ctx, "web", 9000, dipAddr(9000), 1); err == nil || !strings.Contains(err.Error(), "server-id range 1025-2047") {
		t.Fatalf("id 9000 outside the range: %v", err)
	}
	if err := c.AddDIP(ctx, "web", 2000, dipAddr(2000), 1); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, root)
}
