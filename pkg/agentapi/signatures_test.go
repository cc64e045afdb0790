package agentapi

import (
	"fmt"
	"net"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/wire"
)

// TestSignaturesReportLiveSockets: the agent lists exactly the Prism
// signatures of its live connections of the VIP (what the controller's SCT
// is built from), computed as the mux computes them, and forgets closed ones.
func TestSignaturesReportLiveSockets(t *testing.T) {
	l := newServerLab(t)
	const n, buckets = 12, 16
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := l.dialCli(ctx(t), "tcp4", vip.String()+":80")
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	check := func(cs []net.Conn) error {
		want := map[uint64]uint32{}
		for _, c := range cs {
			a := netip.MustParseAddrPort(c.LocalAddr().String())
			want[wire.Flow{Src: a.Addr(), Dst: vip, SrcPort: a.Port(), DstPort: 80, Proto: 6}.Signature()]++
		}
		rep, err := l.client.Signatures(ctx(t), l.api, vip, buckets)
		if err != nil {
			return err
		}
		if int(rep.Total) != len(cs) || len(rep.Sigs) != len(want) {
			return fmt.Errorf("report of %d connections / %d signatures, want %d / %d", rep.Total, len(rep.Sigs), len(cs), len(want))
		}
		for _, sc := range rep.Sigs {
			if want[sc.Sig] != sc.Count {
				return fmt.Errorf("signature %#x counted %d, want %d", sc.Sig, sc.Count, want[sc.Sig])
			}
		}
		return nil
	}
	if err := eventually(func() error { return check(conns) }); err != nil {
		t.Fatal(err)
	}
	for _, c := range conns[:5] {
		c.Close()
	}
	if err := eventually(func() error { return check(conns[5:]) }); err != nil {
		t.Fatalf("after closing 5: %v", err)
	}
}
