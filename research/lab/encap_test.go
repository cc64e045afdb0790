package lab

import "testing"

// Experiment 1 over GUE: the instance's muxes encapsulate in GUE (UDP to
// port 6080, the option as private data) and the agents chain in GUE; a
// server and then a mux leave, and Beamer breaks no connection, as over
// IP-in-IP (TestAffinity).
func TestAffinityGUE(t *testing.T) {
	requireLab(t)
	// With UDP flows (inner UDP, RETURN flag) and QUIC connections routed
	// by connection id (GUE without private data) beside the TCP load.
	r, err := runCI(t, "affinity", "beamer", func(p *Params) { p.Encap, p.UDPFlows, p.QUICFlows = "gue", 4, 2 })
	if err != nil {
		t.Fatal(err)
	}
	summary(t, r)
	want := r.Parameters.Clients * (r.Parameters.PerClient + r.Parameters.UDPFlows + r.Parameters.QUICFlows)
	if r.Connections != want || r.Broken != 0 {
		t.Errorf("beamer over GUE: %d of %d connections, UDP flows and QUIC connections broken (%v), want 0 of %d", r.Broken, r.Connections, r.BrokenReasons, want)
	}
	if r.MuxCounters["fwd_quic_cid"] == 0 {
		t.Errorf("no packet forwarded by QUIC connection id (mux counters %v)", r.MuxCounters)
	}
	// Every forwarded packet left in GUE. The counters are read one by one
	// while the last packets (FINs, retransmissions) still flow, and
	// fwd_gue is counted before the verdict and read after it, so it may
	// run ahead of the verdicts by the packets in flight, never behind.
	c := r.MuxCounters
	sent := c["fwd_bucket"] + c["fwd_quic_cid"] + c["fwd_server_id"]
	if gue := c["fwd_gue"]; sent == 0 || gue < sent || gue > sent+sent/1000 {
		t.Errorf("muxes sent %d packets in GUE of %d forwarded: not a GUE run", gue, sent)
	}
	if r.ChainedPackets == 0 {
		t.Error("no packet was daisy-chained: the removed server's connections did not move")
	}
}

func TestEncapParam(t *testing.T) {
	p, err := DefaultParams("affinity", SizeCI, "beamer")
	if err != nil {
		t.Fatal(err)
	}
	for e, ok := range map[string]bool{"": true, "ipip": true, "gue": true, "vxlan": false} {
		p.Encap = e
		if err := p.Validate(); (err == nil) != ok {
			t.Errorf("encap %q: %v", e, err)
		}
	}
}
