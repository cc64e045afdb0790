package lab

import "testing"

// Cheetah in the lab: experiment 1 (a server and then a mux leave while
// real Linux clients with timestamps download) and the rolling removal,
// with the cookie carried through muxes and agents: no connection may
// break, and the cookie must really have carried them: every segment the
// muxes forwarded went by server id (SYN by policy, the rest by cookie),
// none by bucket (no client lacks timestamps).
func TestCheetahAffinity(t *testing.T) {
	requireLab(t)
	r, err := runCI(t, "affinity", "cheetah", nil)
	if err != nil {
		t.Fatal(err)
	}
	summary(t, r)
	want := r.Parameters.Clients * r.Parameters.PerClient
	if r.Connections != want || r.Broken != 0 {
		t.Errorf("cheetah: %d of %d connections broken (%v), want 0 of %d", r.Broken, r.Connections, r.BrokenReasons, want)
	}
	if r.MuxCounters["fwd_server_id"] == 0 || r.MuxCounters["fwd_bucket"] != 0 {
		t.Errorf("cheetah: muxes forwarded %d segments by server id and %d by bucket; want all by id (cookie)",
			r.MuxCounters["fwd_server_id"], r.MuxCounters["fwd_bucket"])
	}
}

// The rolling removal (servers taken out one request at a time while
// connections live, long-lived idle ones included): Cheetah breaks nothing.
func TestCheetahRollingRemoval(t *testing.T) {
	requireLab(t)
	r, err := runScenario(t, "rolling-removal", "cheetah")
	if err != nil {
		t.Fatal(err)
	}
	summary(t, r)
	want := r.Parameters.Clients * (r.Parameters.PerClient + scenarioIdle("rolling-removal"))
	if r.Connections != want || r.Broken != 0 {
		t.Errorf("cheetah: %d of %d connections broken (%v, by kind %v), want 0 of %d", r.Broken, r.Connections, r.BrokenReasons, r.BrokenByKind, want)
	}
	if r.MuxCounters["fwd_bucket"] != 0 {
		t.Errorf("cheetah: %d segments went by bucket though every client has timestamps", r.MuxCounters["fwd_bucket"])
	}
}
