package controller

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/node/agentapi"
)

// TestHealthStateMachine walks one DIP through every transition of
// healthStep: pending until the first success, Fall failures down with the
// probe's error as reason, Rise successes up, suppression after repeated
// flaps, and the penalty's decay ending it.
func TestHealthStateMachine(t *testing.T) {
	o := HealthOptions{}
	o.fill()
	now := time.Unix(1_700_000_000, 0)
	d := DIP{ID: 1025, Weight: 1, State: Active}
	d.Pending = true
	s := &streak{}
	refused := errors.New("connect: connection refused")
	var what string
	step := func(err error) {
		t.Helper()
		now = now.Add(o.Interval)
		d, what = healthStep(d, s, err, now, &o)
	}
	for range 5 {
		step(refused)
	}
	if !d.Pending || d.Down || d.LastError != refused.Error() {
		t.Fatalf("pending DIP after failures: %+v; want still pending, not down, last error kept", d)
	}
	step(nil)
	if d.Pending || d.Down || !strings.Contains(what, "first probe") {
		t.Fatalf("after the first success: %+v (%q), want up", d, what)
	}
	step(refused)
	step(refused)
	if d.Down {
		t.Fatal("down after 2 failures with Fall 3")
	}
	step(refused)
	if !d.Down || !strings.Contains(what, "connection refused") || d.Reason != what || d.HealthChanged != now.UTC() {
		t.Fatalf("after 3 failures: %+v (%q); want down with the probe error as reason", d, what)
	}
	step(nil)
	if !d.Down {
		t.Fatal("up after 1 success with Rise 2")
	}
	step(nil)
	if d.Down {
		t.Fatal("not up after 2 successes")
	}
	// Flap twice more: the third down transition suppresses the DIP.
	for range 2 {
		for range 3 {
			step(refused)
		}
		for range 2 {
			step(nil)
		}
	}
	if !d.Down || !d.Suppressed {
		t.Fatalf("a DIP flapping 3 times in a minute: %+v; want suppressed", d)
	}
	for range 10 {
		step(nil)
	}
	if !d.Down {
		t.Fatal("suppression ended before the penalty decayed")
	}
	unchanged := d
	step(nil)
	if d != unchanged {
		t.Fatalf("a repeated success changed the record (%+v → %+v): every probe would write to the store", unchanged, d)
	}
	now = now.Add(2 * o.HalfLife) // penalty ~3 → ~0.75 < Reuse
	step(nil)
	if d.Down || d.Suppressed {
		t.Fatalf("still down after the penalty decayed below Reuse: %+v", d)
	}
}

// TestHealthRecordWritesBounded: a DIP failing on and on with error texts
// that differ every time (ephemeral ports) changes its record only at the
// start of the streak and when it goes down, not at every probe.
func TestHealthRecordWritesBounded(t *testing.T) {
	o := HealthOptions{}
	o.fill()
	now := time.Unix(1_700_000_000, 0)
	d := DIP{ID: 1025, Weight: 1, State: Active}
	s := &streak{}
	changes := 0
	for i := range 50 {
		now = now.Add(o.Interval)
		nd, _ := healthStep(d, s, fmt.Errorf("read tcp 198.18.0.1:%d->198.18.0.10:9300: connection reset by peer", 40000+i), now, &o)
		if nd != d {
			changes++
		}
		d = nd
	}
	if !d.Down || changes != 2 {
		t.Fatalf("50 failures changed the record %d times (down=%v), want 2 (streak start, down)", changes, d.Down)
	}
}

// TestHealthUnreachable: a probe the server answered (its agent says the
// service is down, a refused connect, an HTTP error) leaves the DIP
// reachable; one that did not reach it (timeout, no route) marks it
// unreachable — a down DIP that may be dead, chained to last.
func TestHealthUnreachable(t *testing.T) {
	o := HealthOptions{}
	o.fill()
	now := time.Unix(1_700_000_000, 0)
	d := DIP{ID: 1025, Weight: 1, State: Active}
	s := &streak{}
	answered := []error{
		&agentapi.ServiceError{Agent: netip.MustParseAddrPort("198.18.0.10:9300"), VIP: netip.MustParseAddr("198.18.100.1"), Port: 80, Reason: "connection refused"},
		fmt.Errorf("dial tcp4 198.18.0.10:80: %w", syscall.ECONNREFUSED),
		&statusError{url: "http://198.18.0.10:80/", status: "503 Service Unavailable"},
	}
	for _, err := range answered {
		d, _ = healthStep(d, s, err, now, &o)
		if d.Unreachable {
			t.Fatalf("%v: marked unreachable, but the server answered", err)
		}
	}
	timeout := fmt.Errorf("agent 198.18.0.10:9300: %w", context.DeadlineExceeded)
	d, _ = healthStep(d, s, timeout, now, &o)
	if !d.Unreachable || !d.Down {
		t.Fatalf("after a probe that reached nothing: %+v, want down and unreachable", d)
	}
	d, _ = healthStep(d, s, nil, now, &o)
	if d.Unreachable {
		t.Fatal("a successful probe leaves the DIP unreachable")
	}
}
