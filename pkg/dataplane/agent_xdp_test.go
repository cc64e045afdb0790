package dataplane

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
)

type xdpMDCtx struct {
	Data, DataEnd, DataMeta, IngressIfindex, RxQueueIndex, EgressIfindex uint32
}

// TestAgentXDPVectors runs the agent vectors of testdata/vectors.json, in
// order, through the XDP fast path in front of the tc program, as on a
// server with native XDP: each packet the XDP program leaves untouched must
// get the vector's tc decision; each it decapsulates must be one the tc
// program keeps for the stack (a SYN, no option, or the newest generation
// with nothing to chain), with exactly the vector's output bytes, and then
// reaches the tc program as plain IPv4. State carries over from case to
// case, so a decapsulation that skipped a state change the tc program would
// have made shows up in the cases after it.
func TestAgentXDPVectors(t *testing.T) {
	v, err := wiretest.LoadVectors()
	must(t, err)
	netlabtest.RequireRoot(t)
	b := newAgentBench(t, &v.Agent)
	fast := map[string]bool{"local_syn": true, "to_stack": true, "stack_no_option": true}
	decapped := 0
	for _, c := range v.Agent.Cases {
		in, err := hex.DecodeString(c.Input)
		must(t, err)
		before, err := b.agent.Counters()
		must(t, err)
		opts := &ebpf.RunOptions{Data: in, DataOut: make([]byte, len(in)+256),
			Context: xdpMDCtx{DataEnd: uint32(len(in)), IngressIfindex: uint32(b.ifindex)}}
		var ret uint32
		must(t, b.ns.Do(func() error {
			var err error
			ret, err = b.agent.XDPProgram().Run(opts)
			return err
		}))
		out := opts.DataOut // trimmed to what the program left
		if ret != 2 /* XDP_PASS */ {
			t.Errorf("%s: XDP action %d, want XDP_PASS", c.Name, ret)
			continue
		}
		if bytes.Equal(out, in) {
			// Untouched: the tc program decides as the vector says.
			action, tcOut := runTC(t, b.ns, b.ifindex, b.agent.Program(), in)
			after, err := b.agent.Counters()
			must(t, err)
			if action != c.Action || after[c.Counter]-before[c.Counter] != 1 {
				t.Errorf("%s: behind XDP, tc %s with %s moved by %d; want %s, %s by 1", c.Name, action, c.Counter,
					after[c.Counter]-before[c.Counter], c.Action, c.Counter)
			}
			if c.Output != "" {
				if want, _ := hex.DecodeString(c.Output); !bytes.Equal(tcOut, want) {
					t.Errorf("%s: tc output differs behind XDP", c.Name)
				}
			}
			continue
		}
		decapped++
		after, err := b.agent.Counters()
		must(t, err)
		if c.Action != "pass" || !fast[c.Counter] {
			t.Errorf("%s: decapsulated in XDP, but the tc path's decision is %s (%s)", c.Name, c.Action, c.Counter)
		}
		if after[c.Counter]-before[c.Counter] != 1 || after["xdp_decap"]-before["xdp_decap"] != 1 {
			t.Errorf("%s: XDP decapsulation counted %s %d, xdp_decap %d; want 1 each", c.Name, c.Counter,
				after[c.Counter]-before[c.Counter], after["xdp_decap"]-before["xdp_decap"])
		}
		if c.Output != "" {
			if want, _ := hex.DecodeString(c.Output); !bytes.Equal(out, want) {
				t.Errorf("%s: XDP output differs from the tc path's\n got %x\nwant %x", c.Name, out, want)
			}
		}
		// The inner packet then passes the tc program untouched.
		if action, tcOut := runTC(t, b.ns, b.ifindex, b.agent.Program(), out); action != "pass" || !bytes.Equal(tcOut[:len(out)], out) {
			t.Errorf("%s: tc on the decapsulated packet: %s", c.Name, action)
		}
	}
	t.Logf("%d of %d vectors decapsulated in XDP", decapped, len(v.Agent.Cases))
	if decapped < 3 {
		t.Errorf("only %d vectors took the XDP fast path", decapped)
	}
}
