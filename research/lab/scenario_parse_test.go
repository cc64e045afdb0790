package lab

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// Every built-in scenario parses, validates, and names what it needs.
func TestBuiltinScenarios(t *testing.T) {
	names := ScenarioNames()
	for _, want := range []string{"rolling-removal", "rolling-addition", "removal-then-health", "short-window", "vip-bound", "churn-soak", "demo"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("built-in scenario %s missing (have %v)", want, names)
		}
	}
	for _, n := range names {
		sc, err := LoadScenario(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		x, err := sc.Expanded(1)
		if err != nil {
			t.Fatalf("%s expanded: %v", n, err)
		}
		if s, m := x.Needs(); s < 2 || m < 1 {
			t.Errorf("%s needs %d servers, %d muxes", n, s, m)
		}
		if ScenarioTitle(n) == "" {
			t.Errorf("%s has no title line", n)
		}
	}
}

func TestScenarioSettings(t *testing.T) {
	sc, err := ParseScenario("x", strings.NewReader("window 15s\nbind vip\nidle 5 20s\nservers 0 1 2\nmuxes 0\n3s fail-health 1\n4s restore-health 1\n10s end\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Window != 15*time.Second || !sc.BindVIP || sc.Idle != (IdleLoad{5, 20 * time.Second}) {
		t.Fatalf("settings not read: %+v", sc)
	}
	sc.Stretch(2)
	if sc.Window != 30*time.Second || sc.Idle.Every != 40*time.Second || sc.Duration() != 20*time.Second {
		t.Fatalf("stretch: %+v", sc)
	}
	for _, bad := range []string{
		"bind dip\nservers 0\nmuxes 0\n1s end\n",
		"window -1s\nservers 0\nmuxes 0\n1s end\n",
		"idle 0 1s\nservers 0\nmuxes 0\n1s end\n",
		"churn 1s 20s 3s 8\nservers 0\nmuxes 0\n10s end\n", // churn past the end
		"churn 1s 5s 3s 2\nservers 0\nmuxes 0\n10s end\n",  // too few servers
		"servers 0\nmuxes 0\n1s fail-health\n2s end\n",
	} {
		if _, err := ParseScenario("bad", strings.NewReader(bad)); err == nil {
			t.Errorf("accepted:\n%s", bad)
		}
	}
}

// The churn is drawn from the seed: the same seed replays the same
// events, another seed others; it keeps the pool and health bounds.
func TestChurnSeeded(t *testing.T) {
	sc, err := LoadScenario("churn-soak")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := sc.Expanded(7)
	b, _ := sc.Expanded(7)
	c, _ := sc.Expanded(8)
	if !reflect.DeepEqual(a.Events, b.Events) {
		t.Error("same seed, different churn")
	}
	if reflect.DeepEqual(a.Events, c.Events) {
		t.Error("different seeds, same churn")
	}
	for seed := int64(1); seed < 200; seed++ {
		x, err := sc.Expanded(seed)
		if err != nil {
			t.Fatal(err)
		}
		pool, failed := map[int]bool{}, map[int]bool{}
		for _, i := range x.InitialServers {
			pool[i] = true
		}
		kinds := map[string]bool{}
		for _, e := range x.Events {
			kinds[e.Action] = true
			switch e.Action {
			case "remove-server":
				if !pool[e.Args[0]] {
					t.Fatalf("seed %d: %v removes a server not in the pool", seed, e)
				}
				pool[e.Args[0]] = false
			case "add-server":
				if pool[e.Args[0]] {
					t.Fatalf("seed %d: %v adds a server in the pool", seed, e)
				}
				pool[e.Args[0]] = true
			case "fail-health":
				failed[e.Args[0]] = true
			case "restore-health":
				failed[e.Args[0]] = false
			}
			n, healthy := 0, 0
			for i, in := range pool {
				if in {
					n++
					if !failed[i] {
						healthy++
					}
				}
			}
			if n < churnMinPool || healthy < churnMinHealthy {
				t.Fatalf("seed %d: after %v, %d in the pool, %d healthy", seed, e, n, healthy)
			}
		}
		if len(x.Events) < 15 || x.Events[len(x.Events)-1].Action != "end" {
			t.Fatalf("seed %d: %d events", seed, len(x.Events))
		}
		if seed == 1 && len(kinds) < 5 {
			t.Errorf("seed 1 plays only %v", kinds)
		}
	}
	if _, err := (&Scenario{Name: "x", InitialServers: []int{0, 1, 2, 3}, InitialMuxes: []int{0},
		Churn:  &Churn{From: time.Second, Until: 5 * time.Second, Every: time.Second, Servers: 5},
		Events: []Event{{At: 2 * time.Second, Action: "remove-server", Args: []int{1}}, {At: 9 * time.Second, Action: "end"}}}).Expanded(1); err == nil {
		t.Error("a churn scenario with its own server events was accepted")
	}
}

// A name that is neither a file nor a built-in scenario says which
// built-in ones there are.
func TestLoadScenarioUnknown(t *testing.T) {
	_, err := LoadScenario("no-such-scenario")
	if err == nil || !strings.Contains(err.Error(), "rolling-removal") {
		t.Fatalf("want an error listing the built-in scenarios, got %v", err)
	}
	sc, err := LoadScenario("rolling-removal.scenario")
	if err != nil || sc.Name != "rolling-removal" {
		t.Fatalf("built-in by file name: %v, %+v", err, sc)
	}
}
