package lab

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The scenarios of issue 10, what operators do every day, each run at CI
// size for both strategies one after the other: Beamer must break no
// connection; the maglev strategy (per-mux connection tables) runs beside
// it as the comparison, and only has to run. A Beamer failure does not
// stop the maglev run, so both figures are always in the log.

func TestScenarioRollingRemoval(t *testing.T) {
	testScenario(t, "rolling-removal", func(t *testing.T, r *Result) {
		if r.ChainedPackets == 0 {
			t.Error("beamer: no packet was daisy-chained: the removed servers' connections did not move")
		}
	})
}

func TestScenarioRollingAddition(t *testing.T) {
	testScenario(t, "rolling-addition", nil)
}

func TestScenarioRemovalThenHealth(t *testing.T) {
	// FailHealth waits until the controller marks the server down, so a
	// run that reaches the end did move the new owner's buckets again.
	testScenario(t, "removal-then-health", func(t *testing.T, r *Result) {
		if r.Final == nil || len(r.Final.Down()) != 2 {
			t.Errorf("beamer: want exactly the two failed servers down at the end, got %+v", r.Final)
		}
	})
}

func TestScenarioShortWindow(t *testing.T) {
	testScenario(t, "short-window", func(t *testing.T, r *Result) {
		if r.IdleConnections == 0 {
			t.Error("no idle connection ran")
		}
	})
}

func TestScenarioVIPBound(t *testing.T) {
	testScenario(t, "vip-bound", func(t *testing.T, r *Result) {
		if r.Final == nil || len(r.Final.Down()) > 0 || len(r.Final.Pending()) > 0 || r.Final.Unowned > 0 || r.Final.FailOpen {
			t.Errorf("beamer: health checks must keep servers bound to the VIP up: %+v", r.Final)
		}
	})
}

func TestScenarioChurnSoak(t *testing.T) {
	testScenario(t, "churn-soak", func(t *testing.T, r *Result) {
		if r.Churn == nil || len(r.Events) < 10 {
			t.Errorf("the churn played %d events: too few to be a soak", len(r.Events))
		}
	})
}

// testScenario runs a built-in scenario for beamer, then maglev, and
// checks beamer broke nothing (plus check, if any, on the beamer run).
func testScenario(t *testing.T, name string, check func(*testing.T, *Result)) {
	requireLab(t)
	figures := map[string]string{}
	for _, strategy := range []string{"beamer", "maglev"} {
		t.Run(strategy, func(t *testing.T) {
			r, err := runScenario(t, name, strategy)
			if err != nil {
				figures[strategy] = "run failed: " + firstLine(err.Error())
				t.Fatal(err)
			}
			summary(t, r)
			figures[strategy] = fmt.Sprintf("%d of %d broken %v (%d on stopped servers)", r.Broken, r.Connections, r.BrokenReasons, r.BrokenOnFailed)
			if r.Connections == 0 {
				t.Fatal("no connection was opened")
			}
			if strategy != "beamer" {
				return
			}
			// Connections of a server that was stopped die with it; every
			// other broken one is the load balancer's.
			want := r.Parameters.Clients * (r.Parameters.PerClient + scenarioIdle(name))
			if r.Connections != want || r.Broken-r.BrokenOnFailed != 0 {
				t.Errorf("beamer: %d of %d connections broken (%v, by kind %v, by last server %v; %d of them on stopped servers %v), want 0 of %d but those",
					r.Broken, r.Connections, r.BrokenReasons, r.BrokenByKind, r.BrokenByServer, r.BrokenOnFailed, r.FailedServers, want)
			}
			if check != nil {
				check(t, r)
			}
		})
	}
	t.Logf("figures, %s: beamer %s; maglev %s", name, figures["beamer"], figures["maglev"])
}

func scenarioIdle(name string) int {
	sc, err := LoadScenario(name)
	if err != nil {
		return 0
	}
	return sc.Idle.PerClient
}

// runScenario runs a built-in scenario at CI size and checks the lab
// left nothing.
func runScenario(t *testing.T, name, strategy string) (*Result, error) {
	t.Helper()
	sc, err := LoadScenario(name)
	if err != nil {
		t.Fatal(err)
	}
	return runScenarioOf(t, sc, strategy)
}

// runScenarioOf is runScenario for a scenario the test may have changed.
func runScenarioOf(t *testing.T, sc *Scenario, strategy string) (*Result, error) {
	t.Helper()
	name := sc.Name
	p, err := DefaultParams("affinity", SizeCI, strategy)
	if err != nil {
		t.Fatal(err)
	}
	p.Experiment = ""
	var inv *Inventory
	var log strings.Builder
	start := time.Now()
	res, err := Run(context.Background(), RunOptions{Params: p, Scenario: sc, Beamer: beamerBin, Progress: &log,
		Inventory: func(i *Inventory) { inv = i }})
	t.Logf("%s/%s in %v:\n%s", name, strategy, time.Since(start).Round(time.Second), log.String())
	checkClean(t, inv)
	return res, err
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// TestScenarioRollingRemovalPrism: the rolling removal (servers drained one
// request at a time while connections run) under Prism breaks nothing: each
// removed server's connections are migrated into the MCT before its bins
// flip, from its agent's socket list.
func TestScenarioRollingRemovalPrism(t *testing.T) {
	requireLab(t)
	r, err := runScenario(t, "rolling-removal", "prism")
	if err != nil {
		t.Fatal(err)
	}
	summary(t, r)
	want := r.Parameters.Clients * (r.Parameters.PerClient + scenarioIdle("rolling-removal"))
	if r.Connections != want || r.Broken != 0 {
		t.Errorf("prism: %d of %d connections broken (%v, by kind %v), want 0 of %d", r.Broken, r.Connections, r.BrokenReasons, r.BrokenByKind, want)
	}
	if r.MuxCounters["prism_mct_hit"] == 0 {
		t.Error("prism: no packet hit the MCT: the removed servers' connections were not migrated")
	}
}

// TestScenarioRemovalThenHealthPrism: under Prism, a server that fails its
// health checks but still runs (server 0: its service refuses new
// connections, its agent answers) keeps its established connections — they
// are migrated into the MCT before its bins move — and the only broken
// connections are those of the server that stops (server 1), which die
// with it under any strategy. (Before, a down server's entries were pruned
// and its bins moved without migration: 15 of 60 broke besides server 1's.)
func TestScenarioRemovalThenHealthPrism(t *testing.T) {
	requireLab(t)
	r, err := runScenario(t, "removal-then-health", "prism")
	if err != nil {
		t.Fatal(err)
	}
	summary(t, r)
	if r.Connections == 0 {
		t.Fatal("no connection was opened")
	}
	if r.Broken != r.BrokenOnFailed {
		t.Errorf("prism: %d of %d connections broken, %d of them on the stopped server (by server %v, reasons %v): the others had to be kept",
			r.Broken, r.Connections, r.BrokenOnFailed, r.BrokenByServer, r.BrokenReasons)
	}
	if r.Final == nil || len(r.Final.Down()) != 2 {
		t.Errorf("prism: want exactly the two failed servers down at the end, got %+v", r.Final)
	}
	if r.MuxCounters["prism_mct_hit"] == 0 {
		t.Error("prism: no packet hit the MCT: neither the removed nor the down server's connections were migrated")
	}
}
