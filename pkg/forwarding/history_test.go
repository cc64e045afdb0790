package forwarding

import "testing"

func noneDown(ServerID) bool { return false }

// TestHistoryMoves: the rule for one bucket moved again and again: most
// recent owner first, no duplicates, never the owner, at most K, down
// servers behind the running ones (cut first), unowned buckets chain nowhere.
func TestHistoryMoves(t *testing.T) {
	h := &HistoryRules{K: 4, Window: 240, Now: 1000, Down: noneDown}
	b := Bucket{Current: 1025}
	for _, to := range []ServerID{1026, 1027, 1028, 1029, 1030} {
		b = h.Moved(b, Bucket{Current: to, History: Chain{b.Current}, Changed: 1000})
	}
	if want := (Chain{1029, 1028, 1027, 1026}); b.History != want || b.Current != 1030 {
		t.Fatalf("after five moves: %+v, want history %v (K=4 drops the oldest)", b, want)
	}
	// Back to an older owner: it leaves the history, the one it left joins.
	b = h.Moved(b, Bucket{Current: 1027, History: Chain{1030}, Changed: 1001})
	if want := (Chain{1030, 1029, 1028, 1026}); b.History != want {
		t.Fatalf("back to 1027: %v, want %v", b.History, want)
	}
	// Down servers go behind the running ones; past K they are cut first.
	h.Down = func(id ServerID) bool { return id == 1027 || id == 1029 }
	b = h.Moved(b, Bucket{Current: 1031, History: Chain{1027}, Changed: 1002})
	if want := (Chain{1030, 1028, 1026, 1027}); b.History != want {
		t.Fatalf("moved away from down 1027: %v, want %v", b.History, want)
	}
	// Among down servers, those that may be dead go behind those that
	// still answer.
	h.Dead = func(id ServerID) bool { return id == 1027 }
	h.Down = func(id ServerID) bool { return id == 1027 || id == 1028 }
	if got := h.Moved(b, Bucket{Current: 1032, History: Chain{1031}, Changed: 1003}); got.History != (Chain{1031, 1030, 1026, 1028}) {
		t.Fatalf("down 1028 answering, 1027 maybe dead, K=4: %v", got.History)
	}
	if got := h.Aged(0, Bucket{Current: 1031, History: Chain{1027, 1028, 1030}, Changed: 1003}); got.History != (Chain{1030, 1028, 1027}) {
		t.Fatalf("aged: running, down, maybe dead: %v", got.History)
	}
	h.Dead = nil
	h.Down = func(id ServerID) bool { return id == 1027 || id == 1029 }
	if u := h.Moved(b, Bucket{Changed: 1003}); u.History.Len() != 0 {
		t.Fatalf("unowned bucket keeps history %v", u.History)
	}
	h.K = 1 // the paper: one previous owner
	if got := h.Moved(b, Bucket{Current: 1025, History: Chain{1031}}); got.History != (Chain{1031}) {
		t.Fatalf("K=1: %v", got.History)
	}
}

// TestHistoryAging: entries leave at the end of the window unless held;
// a held entry re-stamps the change time from half the window on, the
// unheld entries beside it still leave at the end.
func TestHistoryAging(t *testing.T) {
	b := Bucket{Current: 1025, History: Chain{1026, 1027}, Changed: 1000}
	h := &HistoryRules{K: 4, Window: 240, Down: noneDown}
	h.Now = 1239
	if got := h.Aged(3, b); got != b {
		t.Fatalf("within the window: %+v", got)
	}
	h.Now = 1240
	if got := h.Aged(3, b); got.History.Len() != 0 || got.Changed != 1000 || got.Current != 1025 {
		t.Fatalf("window over: %+v", got)
	}
	var asked []ServerID
	h.Held = func(id ServerID, bucket uint32) bool {
		if bucket != 3 {
			t.Fatalf("hold asked about bucket %d", bucket)
		}
		asked = append(asked, id)
		return id == 1027
	}
	h.Now = 1100 // before half the window: holds are not even asked
	if got := h.Aged(3, b); got != b || len(asked) != 0 {
		t.Fatalf("early: %+v, asked %v", got, asked)
	}
	h.Now = 1130 // half gone: 1027 is held, the bucket re-stamped, 1026 stays (window open)
	got := h.Aged(3, b)
	if got.History != (Chain{1026, 1027}) || got.Changed != 1130 {
		t.Fatalf("held at half window: %+v", got)
	}
	h.Now = 1240 // b not re-stamped: the window is over, only the held entry stays
	if got := h.Aged(3, b); got.History != (Chain{1027}) || got.Changed != 1240 {
		t.Fatalf("held at the end: %+v", got)
	}
	h.Held = nil
	h.Down = func(id ServerID) bool { return id == 1026 }
	h.Now = 1001
	if got := h.Aged(3, b); got.History != (Chain{1027, 1026}) || got.Changed != 1000 {
		t.Fatalf("down 1026 goes last: %+v", got)
	}
	h.Down, h.K = noneDown, 1
	if got := h.Aged(3, b); got.History != (Chain{1026}) {
		t.Fatalf("K lowered to 1: %+v", got)
	}
	far := Bucket{Current: 1025, History: Chain{1026}, Changed: ^uint32(0) - 10}
	if got := (&HistoryRules{K: 4, Window: 240, Now: 1000, Down: noneDown}).Aged(0, far); got.History.Len() != 0 {
		t.Fatalf("change time near 2^32 (window past the end of time) kept: %+v", got)
	}
}

// TestHistoryKeepsHolders: a move that leaves K+1 owners drops the oldest
// entry known idle in the bucket instead of the oldest owner; the owner
// that just left is never asked; with no idle entry the oldest leaves and
// is told to Evicted; Moved (no index) keeps the oldest-first rule.
func TestHistoryKeepsHolders(t *testing.T) {
	var asked []ServerID
	var evicted []ServerID
	idle := map[ServerID]bool{1027: true, 1028: true, 1030: true}
	h := &HistoryRules{K: 4, Window: 240, Now: 2000,
		Idle: func(id ServerID, bucket uint32, since uint32) bool {
			if bucket != 7 || since != 1500 {
				t.Errorf("Idle asked for bucket %d since %d, want 7 since 1500", bucket, since)
			}
			asked = append(asked, id)
			return idle[id]
		},
		Evicted: func(id ServerID, bucket uint32) { evicted = append(evicted, id) }}
	old := Bucket{Current: 1030, History: Chain{1029, 1028, 1027, 1026}, Changed: 1500}
	got := h.MovedAt(7, old, Bucket{Current: 1031, Changed: 2000})
	if want := (Chain{1030, 1029, 1028, 1026}); got.History != want || got.Current != 1031 || got.Changed != 2000 {
		t.Fatalf("idle 1027 should leave, holder 1026 stay: %+v, want %v", got, want)
	}
	if len(evicted) != 0 || len(asked) != 2 || asked[0] != 1026 || asked[1] != 1027 {
		t.Fatalf("asked %v (want the oldest first, stopping at the first idle; never 1030, leaving now), evicted %v", asked, evicted)
	}
	idle = map[ServerID]bool{}
	got = h.MovedAt(7, old, Bucket{Current: 1031, Changed: 2000})
	if want := (Chain{1030, 1029, 1028, 1027}); got.History != want || len(evicted) != 1 || evicted[0] != 1026 {
		t.Fatalf("no idle entry: %v (want %v), evicted %v (want [1026])", got.History, want, evicted)
	}
	// Not full: nothing asked, nothing cut.
	asked, evicted = nil, nil
	short := Bucket{Current: 1030, History: Chain{1029, 1028}, Changed: 1500}
	if got := h.MovedAt(7, short, Bucket{Current: 1031, Changed: 2000}); got.History != (Chain{1030, 1029, 1028}) || len(asked)+len(evicted) != 0 {
		t.Fatalf("short history: %v, asked %v, evicted %v", got.History, asked, evicted)
	}
	idle = map[ServerID]bool{1027: true}
	if got := h.Moved(old, Bucket{Current: 1031, Changed: 2000}); got.History != (Chain{1030, 1029, 1028, 1027}) || len(asked)+len(evicted) != 0 {
		t.Fatalf("Moved without index: %v, asked %v, evicted %v", got.History, asked, evicted)
	}
}
