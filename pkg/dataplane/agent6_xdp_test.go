package dataplane

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/cilium/ebpf"
)

// TestAgent6XDP runs GUE-over-IPv6 packets through the agent's XDP fast
// path (tail-called for frames that are not IPv4): it decapsulates exactly
// the packets the tc program keeps for the stack without a lookup (SYN, no
// private data, newest generation with no previous owner but us) and
// hands everything else on untouched, which the tc program then decides.
func TestAgent6XDP(t *testing.T) {
	b := newAgent6Bench(t)
	b.agent.SetNewestSeen(0, uint64(mux6Incarnation)<<32|7)
	me, prev := mux6Server[1026], mux6Server[1025]
	tcp, wrap, decapped := bench6TCP, bench6Wrap, bench6Decapped
	syn, stray := tcp(40001, 0x02), tcp(40002, 0x10)
	moved := wrap(stray, priv6(7, 0, 0, mux6Changed, prev))
	cases := []struct {
		name    string
		frame   []byte
		counter string // moved by the XDP program ("": untouched, the tc program's)
		want    []byte
		tc      string // the tc program's action on an untouched frame
	}{
		{"syn", wrap(syn, priv6(7, 0, 0, 0)), "local_syn", decapped(syn), ""},
		{"no private data", wrap(stray, nil), "stack_no_option", decapped(stray), ""},
		{"newest, no history", wrap(stray, priv6(7, 0, 0, 0)), "to_stack", decapped(stray), ""},
		{"newest, only us in the history", wrap(stray, priv6(7, 0, 0, mux6Changed, me)), "to_stack", decapped(stray), ""},
		{"a previous owner could take it", moved, "", nil, "redirect"},
		{"older generation", wrap(stray, priv6(6, 0, 0, 0)), "", nil, "drop"},
		{"untrusted", gue6Wrap(stray, netip.MustParseAddr("2001:db8:ffff::1"), me, forwarding.DefaultGUEPort, nil), "", nil, "drop"},
		{"udp inner", wrap(pkt6{src: mux6Client, dst: mux6VIP, proto: 17, sport: 1, dport: 53}.frame(), nil), "", nil, "pass"},
	}
	for _, c := range cases {
		before, err := b.agent.Counters()
		must(t, err)
		opts := &ebpf.RunOptions{Data: c.frame, DataOut: make([]byte, len(c.frame)+256),
			Context: xdpMDCtx{DataEnd: uint32(len(c.frame)), IngressIfindex: uint32(b.ifindex)}}
		var ret uint32
		must(t, b.ns.Do(func() error {
			var err error
			ret, err = b.agent.XDPProgram().Run(opts)
			return err
		}))
		after, err := b.agent.Counters()
		must(t, err)
		if ret != 2 {
			t.Errorf("%s: XDP action %d, want XDP_PASS", c.name, ret)
			continue
		}
		if c.counter == "" {
			if !bytes.Equal(opts.DataOut, c.frame) || after["xdp_decap"] != before["xdp_decap"] {
				t.Errorf("%s: the XDP path took it, want it untouched for tc", c.name)
				continue
			}
			if action, _ := runTC(t, b.ns, b.ifindex, b.agent.Program(), c.frame); action != c.tc {
				t.Errorf("%s: tc behind XDP: %s, want %s", c.name, action, c.tc)
			}
			continue
		}
		if !bytes.Equal(opts.DataOut, c.want) {
			t.Errorf("%s: output\n got %x\nwant %x", c.name, opts.DataOut, c.want)
		}
		for _, k := range []string{c.counter, "xdp_decap", "ipv6"} {
			if after[k]-before[k] != 1 {
				t.Errorf("%s: counter %s moved by %d, want 1", c.name, k, after[k]-before[k])
			}
		}
		// What reaches tc next is plain IPv6: ordinary traffic to it.
		if action, _ := runTC(t, b.ns, b.ifindex, b.agent.Program(), opts.DataOut); action != "pass" {
			t.Errorf("%s: the decapsulated packet in tc: %s, want pass", c.name, action)
		}
	}
}
