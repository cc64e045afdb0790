package beamercli

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// TestMuxRestartUnderTraffic: the real `beamer mux --config` (one mux,
// static, no BGP) restarted under live connections, for Beamer, Prism and
// Cheetah: after SIGUSR2 (exit for an upgrade) its pinned program forwards
// until the next mux swaps its own in; after SIGTERM (a graceful stop,
// which detaches: with BGP, routers would have moved the traffic to other
// muxes during --drain-delay) nothing forwards until the next mux is up,
// and TCP's retransmissions carry the connections over. No connection
// breaks either way; the longest pause of a connection is reported for
// each (issue 28, "the same for the mux").
func TestMuxRestartUnderTraffic(t *testing.T) {
	for _, s := range []forwarding.Strategy{forwarding.StrategyBeamer, forwarding.StrategyPrism, forwarding.StrategyCheetah,
		forwarding.StrategyMaglev, forwarding.StrategyAWFD} {
		t.Run(string(s), func(t *testing.T) { testMuxRestart(t, s) })
	}
}

func testMuxRestart(t *testing.T, strategy forwarding.Strategy) {
	r := newRestartRig(t, strategy, "mxrs")
	r.agentHere(t, r.srv, arServer, 1030)
	extra := ""
	if strategy == forwarding.StrategyCheetah {
		extra = fmt.Sprintf("    cheetah: {policy: rr, keys: {current: %d, keys: [%s, %s]}}\n", arKeys.Current, arKeys.Keys[0], arKeys.Keys[1])
	}
	if err := os.WriteFile(r.cfg, []byte(fmt.Sprintf(`interface: eth0
instances:
  - name: web
    strategy: %s
    vips: [%s]
    port_low: 80
    port_high: 80
    buckets: %d
%s    servers:
      - {id: 1030, address: %s}
`, strategy, arVIP, arBuckets, extra, arServer)), 0o600); err != nil {
		t.Fatal(err)
	}
	start := func() (*proc, time.Duration) {
		t.Helper()
		p := nsenterBeamer(t, r.muxNS, "mux", "--config", r.cfg, "--pin-dir", r.pins, "--state-file", r.state)
		began := time.Now()
		p.waitFor(t, "mux", "mux forwarding")
		return p, time.Since(began)
	}
	mux, took := start()
	t.Logf("first mux forwarding %v after its start", took.Round(time.Millisecond))
	load := r.load(t)
	load.Flowing(t, "before the restart")
	echo, stream := load.TakeLongest()
	t.Logf("%s, no restart: longest pause of a connection %v (echo, a line every 2 ms), %v (download)", strategy, echo.Round(time.Millisecond), stream.Round(time.Millisecond))
	for _, sig := range []syscall.Signal{syscall.SIGUSR2, syscall.SIGTERM} {
		prog := xdpProg(r.muxNS)
		mux.stop(t, sig)
		if sig == syscall.SIGUSR2 {
			if now := xdpProg(r.muxNS); now != prog {
				t.Fatalf("after %v: XDP program %q, want the exited mux's %q still attached", sig, now, prog)
			}
			load.Flowing(t, "no mux process after SIGUSR2")
		} else if now := xdpProg(r.muxNS); now != "" {
			t.Fatalf("after %v: XDP program %q still attached, want the graceful stop's detach", sig, now)
		}
		mux, took = start()
		load.Flowing(t, fmt.Sprintf("the next mux after %v", sig))
		echo, stream := load.TakeLongest()
		t.Logf("%s, mux %s and start (%v to forward): longest pause of a connection %v (echo, a line every 2 ms), %v (download)",
			strategy, sigName(sig), took.Round(time.Millisecond), echo.Round(time.Millisecond), stream.Round(time.Millisecond))
	}
	broken := load.End()
	t.Logf("%s: %d of %d connections broken", strategy, len(broken), arEcho+arStream)
	if len(broken) > 0 {
		t.Fatalf("connections broke: %v\nmux:\n%s", broken, mux.output())
	}
	mux.stop(t, syscall.SIGTERM)
}
