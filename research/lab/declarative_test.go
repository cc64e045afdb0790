package lab

import "testing"

// TestScenarioDeclarativeApply: `ctl apply` of an exported file with two
// servers removed and two added, under long-lived connections through the
// VIP, breaks none of them; the removed servers' connections are
// daisy-chained to them, and the new servers end up owning buckets.
func TestScenarioDeclarativeApply(t *testing.T) {
	requireLab(t)
	r, err := runScenario(t, "declarative-apply", "beamer")
	if err != nil {
		t.Fatal(err)
	}
	summary(t, r)
	want := r.Parameters.Clients * r.Parameters.PerClient
	if r.Connections != want || r.Broken != 0 {
		t.Errorf("%d of %d connections broken (%v, by kind %v, by last server %v), want 0 of %d",
			r.Broken, r.Connections, r.BrokenReasons, r.BrokenByKind, r.BrokenByServer, want)
	}
	if r.ChainedPackets == 0 {
		t.Error("no packet was daisy-chained: the removed servers' connections did not move")
	}
	if r.Final == nil {
		t.Fatal("no final state of the instance")
	}
	owners := map[int]int{}
	for _, d := range r.Final.DIPs {
		owners[d.ID] = d.Buckets
	}
	for _, i := range []int{6, 7} {
		if owners[ServerID(i)] == 0 {
			t.Errorf("added server %d owns no bucket at the end: %+v", i, r.Final.DIPs)
		}
	}
	for _, i := range []int{4, 5} {
		if owners[ServerID(i)] != 0 {
			t.Errorf("removed server %d still owns %d buckets at the end", i, owners[ServerID(i)])
		}
	}
}
