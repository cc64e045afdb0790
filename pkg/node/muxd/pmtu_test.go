package muxd

import (
	"bytes"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestClientPathMTUAdapts: the mux's link has the same MTU as the client's
// (1500), so the client's full-size segments cannot be encapsulated. The
// mux answers them with ICMP "fragmentation needed" for 1464 (1500 − 36),
// the client's kernel lowers its path MTU to the VIP and resends, and a
// transfer larger than one segment gets through (issue 11, row "a frame too
// large once encapsulated").
func TestClientPathMTUAdapts(t *testing.T) {
	r := newRestartNetMTU(t, 1500)
	cfg, err := config.LoadMux(r.dir + "/mux.yaml")
	must(t, err)
	var d *Daemon
	must(t, r.mux.Do(func() (err error) {
		d, err = Start(Options{Interface: "eth0", XDPMode: dataplane.XDPDriver, PinDir: "-", StateFile: r.dir + "/state.json"})
		if err != nil {
			return err
		}
		return d.SetInstance(cfg.Instances[0].Instance, cfg.Instances[0].Table())
	}))
	defer r.mux.Do(d.Close)

	c := netlabtest.Dial(t, r.client, &net.Dialer{Timeout: 3 * time.Second}, "tcp4", netip.AddrPortFrom(rsVIP, 80).String())
	defer c.Close()
	msg := bytes.Repeat([]byte("0123456789abcdef"), 1000) // 16 000 bytes: full-size segments
	c.SetDeadline(time.Now().Add(10 * time.Second))
	go c.Write(msg)
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echo of %d bytes through a 1500-byte mux link: %v", len(msg), err)
	}
	counters, err := d.Mux().Counters()
	must(t, err)
	if counters["icmp_too_big"] == 0 {
		t.Errorf("no ICMP too-big sent: %v", counters)
	}
	out, err := r.client.Run("ip", "route", "get", rsVIP.String())
	must(t, err)
	if !strings.Contains(out, "mtu 1464") {
		t.Errorf("client's route to the VIP has not learned MTU 1464:\n%s", out)
	}
}
