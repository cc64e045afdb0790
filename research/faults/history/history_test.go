package history

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// clean is a run with every kind of outcome and no violation: two muxes
// follow generations 1–4 of incarnation 100, one restarts, a request
// fails, one times out and took effect, one times out and did not.
func clean() History {
	return History{
		Requests: []Request{
			{ID: 1, Op: "add 1026", Key: "server/1026", Value: "w1", Start: at(0), End: at(50), Outcome: OK, Generation: 2},
			{ID: 2, Op: "weight 1025 3", Key: "server/1025", Value: "w3", Start: at(100), End: at(150), Outcome: OK, Generation: 3},
			{ID: 3, Op: "weight 1025 5", Key: "server/1025", Value: "w5", Start: at(200), End: at(250), Outcome: Failed, Err: "no leader"},
			{ID: 4, Op: "remove 1026", Key: "server/1026", Value: Absent, Start: at(300), End: at(5300), Outcome: Unknown},
			{ID: 5, Op: "weight 1027 2", Key: "server/1027", Value: "w2", Start: at(400), End: at(5400), Outcome: Unknown},
		},
		Applies: []Apply{
			{Mux: "mux0", Run: "a", At: at(10), Instance: "web", Incarnation: 100, Generation: 1, Digest: "d1"},
			{Mux: "mux1", Run: "b", At: at(12), Instance: "web", Incarnation: 100, Generation: 1, Digest: "d1"},
			{Mux: "mux0", Run: "a", At: at(40), Instance: "web", Incarnation: 100, Generation: 2, Digest: "d2"},
			{Mux: "mux1", Run: "b", At: at(45), Instance: "web", Incarnation: 100, Generation: 2, Digest: "d2"},
			{Mux: "mux0", Run: "a", At: at(140), Instance: "web", Incarnation: 100, Generation: 3, Digest: "d3"},
			// mux1 restarts and loads generation 2 again: a new run.
			{Mux: "mux1", Run: "c", At: at(160), Instance: "web", Incarnation: 100, Generation: 2, Digest: "d2"},
			{Mux: "mux1", Run: "c", At: at(170), Instance: "web", Incarnation: 100, Generation: 3, Digest: "d3"},
			// a failover: a fresh incarnation.
			{Mux: "mux0", Run: "a", At: at(6000), Instance: "web", Incarnation: 101, Generation: 1, Digest: "d4"},
			{Mux: "mux1", Run: "c", At: at(6010), Instance: "web", Incarnation: 101, Generation: 1, Digest: "d4"},
		},
		Muxes: []string{"mux0", "mux1"},
		Final: Final{HealedAt: at(5500), Instance: "web", Incarnation: 101, Generation: 1, Digest: "d4",
			State:   map[string]string{"server/1025": "w3", "server/1027": "w2"}, // 1026 removed
			Initial: map[string]string{"server/1025": "w1"}},
		Bound:       2 * time.Second,
		Connections: 40,
	}
}

func TestCleanHistoryPasses(t *testing.T) {
	if vs := Check(clean()); len(vs) != 0 {
		t.Fatalf("clean history: %s", Report(vs))
	}
	if got := Report(nil); !strings.HasPrefix(got, "history clean") {
		t.Errorf("Report(nil) = %q", got)
	}
}

// TestEachPropertyFails crafts one violation per property on the clean
// history and checks that exactly that property is reported.
func TestEachPropertyFails(t *testing.T) {
	for _, c := range []struct {
		property string
		spoil    func(h *History)
	}{
		{"unique-table", func(h *History) {
			// two controllers both published generation 3 of incarnation 100
			h.Applies[6].Digest = "d3-other"
		}},
		{"unique-table", func(h *History) {
			// the store's final table differs from what muxes applied under the same pair
			h.Final.Digest = "d4-other"
			h.Applies = append(h.Applies,
				Apply{Mux: "mux0", Run: "a", At: at(6100), Instance: "web", Incarnation: 101, Generation: 1, Digest: "d4-other"},
				Apply{Mux: "mux1", Run: "c", At: at(6100), Instance: "web", Incarnation: 101, Generation: 1, Digest: "d4-other"})
		}},
		{"monotonic", func(h *History) {
			// mux0 goes back to generation 2 within one run
			h.Applies = append(h.Applies[:5:5], append([]Apply{{Mux: "mux0", Run: "a", At: at(150), Instance: "web", Incarnation: 100, Generation: 2, Digest: "d2"}}, h.Applies[5:]...)...)
		}},
		{"monotonic", func(h *History) {
			// an older incarnation after a newer one, even with a higher generation
			h.Applies = append(h.Applies[:7:7], append([]Apply{
				{Mux: "mux0", Run: "a", At: at(3000), Instance: "web", Incarnation: 101, Generation: 0, Digest: "d4-0"},
				{Mux: "mux0", Run: "a", At: at(4000), Instance: "web", Incarnation: 100, Generation: 9, Digest: "d9"}}, h.Applies[7:]...)...)
		}},
		{"acked-durable", func(h *History) {
			// the acknowledged weight change is lost
			h.Final.State["server/1025"] = "w1"
		}},
		{"acked-durable", func(h *History) {
			// a value no request set (the initial one does not excuse it after an ack)
			h.Final.State["server/1025"] = "w7"
			h.Final.Initial["server/1025"] = "w7"
		}},
		{"failed-absent", func(h *History) {
			// the failed weight change took effect over the acknowledged one
			h.Final.State["server/1025"] = "w5"
		}},
		{"failed-absent", func(h *History) {
			// removed (acknowledged), then a failed add took effect: the
			// initial state having the same value does not explain it
			h.Requests = append(h.Requests,
				Request{ID: 6, Op: "remove 1025", Key: "server/1025", Value: Absent, Start: at(500), End: at(550), Outcome: OK},
				Request{ID: 7, Op: "add 1025", Key: "server/1025", Value: "w1", Start: at(600), End: at(650), Outcome: Failed, Err: "already exists"})
			h.Final.State["server/1025"] = "w1"
		}},
		{"failed-absent", func(h *History) {
			// a request reported failed took effect (and no one else set that value)
			h.Requests = append(h.Requests, Request{ID: 6, Op: "weight 1028 7", Key: "server/1028", Value: "w7", Start: at(500), End: at(550), Outcome: Failed, Err: "no leader"})
			h.Final.State["server/1028"] = "w7"
		}},
		{"converged", func(h *History) {
			// mux1 never reaches the final table
			h.Applies = h.Applies[:len(h.Applies)-1]
		}},
		{"converged", func(h *History) {
			// mux1 reaches it, but too late
			h.Applies[len(h.Applies)-1].At = at(5500 + 2001)
		}},
		{"converged", func(h *History) {
			// mux0 applies something else after the final table
			h.Applies = append(h.Applies, Apply{Mux: "mux0", Run: "a", At: at(6500), Instance: "web", Incarnation: 101, Generation: 2, Digest: "d5"})
		}},
		{"no-broken", func(h *History) { h.Broken = 1 }},
	} {
		h := clean()
		c.spoil(&h)
		vs := Check(h)
		if len(vs) == 0 {
			t.Errorf("%s: a crafted violation passed", c.property)
			continue
		}
		for _, v := range vs {
			if v.Property != c.property {
				t.Errorf("%s: also reported %s", c.property, v)
			}
		}
		t.Logf("%s", Report(vs))
	}
}

// TestUnknownMayGoEitherWay: a request that timed out may have taken
// effect or not; neither is a violation.
func TestUnknownMayGoEitherWay(t *testing.T) {
	h := clean()
	h.Final.State["server/1026"] = "w1"  // the unknown remove did not happen
	delete(h.Final.State, "server/1027") // the unknown weight change did not happen
	if vs := Check(h); len(vs) != 0 {
		t.Fatal(Report(vs))
	}
	// A failed request whose value an unknown one also set is explained.
	h = clean()
	h.Requests[2].Key, h.Requests[2].Value = "server/1027", "w2"
	if vs := Check(h); len(vs) != 0 {
		t.Fatal(Report(vs))
	}
}
