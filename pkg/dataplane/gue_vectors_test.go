package dataplane

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
)

// TestGUEMuxVectors runs the mux cases of pkg/wire/testdata/gue-vectors.json
// (the IP-in-IP scenario with the instance's encap set to gue, port 7070)
// through the XDP program: action, counter and exact output bytes, and every
// encapsulated packet counted fwd_gue.
func TestGUEMuxVectors(t *testing.T) {
	v, err := wiretest.LoadGUEVectors()
	must(t, err)
	netlabtest.RequireRoot(t)
	m, err := LoadMux(MuxOptions{Addr: v.Mux.MuxAddr})
	must(t, err)
	t.Cleanup(func() { m.Close() })
	table, err := v.Mux.Table()
	must(t, err)
	must(t, m.SetInstance(v.Mux.Instance, table))
	before, err := m.Counters()
	must(t, err)
	runMuxCases(t, m, newMuxBench(t, &v.Mux), v.Mux.Cases)
	after, err := m.Counters()
	must(t, err)
	want := uint64(0)
	for _, c := range v.Mux.Cases {
		if (c.Action == "tx" || c.Action == "redirect") && c.Counter != "icmp_echo_answered" {
			want++
		}
	}
	if got := after["fwd_gue"] - before["fwd_gue"]; got != want || want < 20 {
		t.Errorf("fwd_gue moved by %d, want %d (the encapsulated cases)", got, want)
	}
}

// TestGUEMaglevVectors runs the Maglev cases of gue-vectors.json, in order
// (they fill the connection table): another strategy in GUE, without
// private data where Maglev sends no option.
func TestGUEMaglevVectors(t *testing.T) {
	v, err := wiretest.LoadGUEVectors()
	must(t, err)
	netlabtest.RequireRoot(t)
	m, err := LoadMux(MuxOptions{Addr: v.Maglev.MuxAddr, ConnTrackEntries: 4096})
	must(t, err)
	t.Cleanup(func() { m.Close() })
	table, err := v.Maglev.Table()
	must(t, err)
	must(t, m.SetInstance(v.Maglev.Instance, table))
	runMuxCases(t, m, newMuxBench(t, &v.Mux), v.Maglev.Cases)
}

// TestGUEAgentVectors runs the agent cases of gue-vectors.json, in order,
// through the tc program.
func TestGUEAgentVectors(t *testing.T) {
	runGUEAgentVectors(t, false)
}

// TestGUEAgentXDPVectors runs them through the XDP fast path in front of
// the tc program (as TestAgentXDPVectors does for IP-in-IP): a packet XDP
// decapsulates must be one tc keeps for the stack, with the same bytes.
func TestGUEAgentXDPVectors(t *testing.T) {
	runGUEAgentVectors(t, true)
}

func runGUEAgentVectors(t *testing.T, withXDP bool) {
	v, err := wiretest.LoadGUEVectors()
	must(t, err)
	netlabtest.RequireRoot(t)
	b := newAgentBench(t, &v.Agent)
	fast := map[string]bool{"local_syn": true, "to_stack": true, "stack_no_option": true}
	decapped, gue := 0, 0
	for _, c := range v.Agent.Cases {
		in, err := hex.DecodeString(c.Input)
		must(t, err)
		before, err := b.agent.Counters()
		must(t, err)
		out, action := in, ""
		xdpDecap := false
		if withXDP {
			opts := &ebpf.RunOptions{Data: in, DataOut: make([]byte, len(in)+256),
				Context: xdpMDCtx{DataEnd: uint32(len(in)), IngressIfindex: uint32(b.ifindex)}}
			var ret uint32
			must(t, b.ns.Do(func() error {
				var err error
				ret, err = b.agent.XDPProgram().Run(opts)
				return err
			}))
			if ret != 2 /* XDP_PASS */ {
				t.Errorf("%s: XDP action %d, want XDP_PASS", c.Name, ret)
				continue
			}
			out = opts.DataOut
			xdpDecap = !bytes.Equal(out, in)
		}
		if xdpDecap {
			decapped++
			action = "pass"
			if !fast[c.Counter] {
				t.Errorf("%s: decapsulated in XDP, but the tc path's decision is %s (%s)", c.Name, c.Action, c.Counter)
			}
		} else {
			action, out = runTC(t, b.ns, b.ifindex, b.agent.Program(), in)
		}
		after, err := b.agent.Counters()
		must(t, err)
		if action != c.Action {
			t.Errorf("%s: action %s, want %s", c.Name, action, c.Action)
		}
		if d := after[c.Counter] - before[c.Counter]; d != 1 {
			t.Errorf("%s: counter %s moved by %d, want 1", c.Name, c.Counter, d)
		}
		if xdpDecap && after["xdp_decap"]-before["xdp_decap"] != 1 {
			t.Errorf("%s: xdp_decap moved by %d, want 1", c.Name, after["xdp_decap"]-before["xdp_decap"])
		}
		// Every GUE packet the agent took (not passed as foreign, not
		// refused before its GUE headers were read) is counted gue once.
		took := strings.HasPrefix(c.Name, "gue") && c.Counter != "pass_not_encap" && c.Counter != "pass_not_for_us" &&
			!strings.HasPrefix(c.Counter, "drop_untrusted") && !strings.HasPrefix(c.Name, "gue scenario") &&
			c.Counter != "drop_fragment" && c.Counter != "drop_bad_option" && c.Counter != "drop_bad_header" && c.Counter != "drop_truncated" &&
			c.Counter != "drop_bad_checksum" && c.Counter != "drop_bad_udp_checksum"
		if took {
			gue++
			if d := after["gue"] - before["gue"]; d != 1 {
				t.Errorf("%s: gue moved by %d, want 1", c.Name, d)
			}
		}
		if c.Output != "" {
			want, _ := hex.DecodeString(c.Output)
			if !bytes.Equal(out[:min(len(out), len(want))], want) || len(out) < len(want) {
				t.Errorf("%s: output differs\n got %x\nwant %x", c.Name, out, want)
			}
		}
	}
	t.Logf("%d GUE packets taken, %d decapsulated in XDP, of %d cases", gue, decapped, len(v.Agent.Cases))
	if withXDP && decapped < 10 {
		t.Errorf("only %d GUE vectors took the XDP fast path", decapped)
	}
}
