package cheetahsim

import "testing"

// At a small size: Cheetah breaks nothing, Beamer's breakage grows with the
// update rate (it stays 0 at the lowest), the published Beamer breaks more
// than this product's at a high rate, and round robin balances better than
// hashing.
func TestSmallRuns(t *testing.T) {
	rows := PCC(PCCConfig{Seed: 1, Servers: 16, Active: 2000, MeanLife: 5, Duration: 60, PerMinute: []float64{1, 120},
		ChainLen: 4, WindowSecs: 240})
	got := map[string]map[float64]PCCRow{}
	for _, r := range rows {
		if got[r.Design] == nil {
			got[r.Design] = map[float64]PCCRow{}
		}
		got[r.Design][r.PerMinute] = r
		t.Logf("%+v", r)
	}
	if got["cheetah"][120].Broken != 0 {
		t.Errorf("cheetah broke connections")
	}
	if got["beamer"][120].Broken < got["beamer"][1].Broken {
		t.Errorf("beamer breaks less at 120 updates/min than at 1")
	}
	if pub, prod := got[DesignBeamerPublished][120].Broken, got[DesignBeamer][120].Broken; pub <= prod {
		t.Errorf("published Beamer broke %d connections at 120 updates/min, this product's %d: want more", pub, prod)
	}
	if got["maglev"][120].Broken == 0 {
		t.Errorf("maglev entries never moved at 120 updates/min")
	}
	im, err := Imbalance(1, []int{16}, []int{5000}, 20)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]float64{}
	for _, r := range im {
		by[r.Policy] = r.Imbalance
		t.Logf("%+v", r)
	}
	if !(by["rr"] < by["hash"]) {
		t.Errorf("round robin %.3f not below hash %.3f", by["rr"], by["hash"])
	}
}
