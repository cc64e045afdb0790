package lab

import (
	"context"
	"strings"
	"testing"
)

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

// Key rotation through `ctl cheetah rotate-key` (scenario key-rotation)
// while clients open a new connection for every download and keep idle
// connections open across the rotation: the controller publishes the new
// key to the muxes and pushes it to the agents (no key is configured by
// hand in the lab), then makes it current. No connection breaks, no
// segment is dropped as a bad cookie, the idle connections
// (opened before) live on with key id 0, and the connections opened after
// the switch carry key id 1.
func TestCheetahKeyRotation(t *testing.T) {
	requireLab(t)
	sc, err := LoadScenario("key-rotation")
	if err != nil {
		t.Fatal(err)
	}
	p, err := DefaultParams("affinity", SizeCI, "cheetah")
	if err != nil {
		t.Fatal(err)
	}
	p.Experiment, p.Persistent, p.PerClient = "", false, 8
	var inv *Inventory
	var log strings.Builder
	r, err := Run(context.Background(), RunOptions{Params: p, Scenario: sc, Beamer: beamerBin, Progress: &log,
		Inventory: func(i *Inventory) { inv = i }})
	t.Logf("key-rotation/cheetah:\n%s", log.String())
	checkClean(t, inv)
	if err != nil {
		t.Fatal(err)
	}
	summary(t, r)
	idle := p.Clients * scenarioIdle("key-rotation")
	if r.Broken != 0 || r.IdleConnections != idle || r.Connections <= idle {
		t.Errorf("cheetah: %d of %d connections broken (%v, by kind %v), %d idle: want none broken, %d idle and short-lived ones",
			r.Broken, r.Connections, r.BrokenReasons, r.BrokenByKind, r.IdleConnections, idle)
	}
	c := r.CheetahCounters
	t.Logf("mux cheetah counters: %v", c)
	// Segments without timestamps (Linux sends its RSTs without) take the
	// bucket fallback: counted, and never the reason of a broken connection
	// above.
	if c["bad_cookie"] != 0 || c["cookie_key1"] == 0 || c["cookie_hit"] <= c["cookie_key1"] || c["fallback"] > 20 {
		t.Errorf("after the rotation: %d bad cookies, %d of %d cookie hits with key id 1, %d fallbacks: want 0, hits of both key ids, few fallbacks (RSTs)",
			c["bad_cookie"], c["cookie_key1"], c["cookie_hit"], c["fallback"])
	}
}
