package agentapi

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"

	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// SignaturesPath lists the Prism signatures of a server's live connections
// (GET /v1/signatures?vip=V&buckets=B): the controller's software
// connection table (SCT) is built from these answers — servers know their
// connections exactly, including those whose SYN has just arrived, and
// never write to the store.
const SignaturesPath = "/v1/signatures"

// SigCount is one signature (wire.Flow.Signature) of a bucket and how many
// live connections of this server have it (more than one: a collision,
// §5 of the Prism paper: they share one MCT entry).
type SigCount struct {
	Sig   uint64 `json:"sig"`
	Count uint32 `json:"count"`
}

// SignaturesReport answers GET /v1/signatures: by increasing signature.
// The bucket of a signature is wire.SigBucket(sig, Buckets).
type SignaturesReport struct {
	VIP     netip.Addr `json:"vip"`
	Buckets uint32     `json:"buckets"`
	Total   uint32     `json:"total"`
	Sigs    []SigCount `json:"sigs"`
}

// prismLive: the states of liveStates, except handshakes whose SYN-ACK
// had to be sent again. sock_diag lists request sockets (a SYN answered,
// the handshake not done) as SYN_RECV, and a SYN flood leaves thousands of
// them, one per spoofed source, for the minute the kernel retries; copied
// into the MCT on a migration they would fill it with flows that never
// send a packet (measured: 4,112 entries in the CI synflood run). A real
// client answers the SYN-ACK within a round trip, so a handshake still
// waiting after the first retransmission (1 s) is most likely spoofed or
// its client gone; one younger than that is kept, so a connection in its
// handshake while its bin moves is protected. (Its handshake completing
// after the flip on the old owner needs the MCT entry: without it the
// final ACK would reach the new owner.)
func prismLive(state, retrans uint8) bool {
	if state == 3 || state == 12 { // SYN_RECV as sock_diag reports request sockets; NEW_SYN_RECV
		return retrans == 0
	}
	return liveStates[state]
}

func listSignatures(ns netns.NsHandle, vip netip.Addr, n uint32) (*SignaturesReport, error) {
	socks, err := dumpTCP(ns, unix.AF_INET) // prism: IPv4 instances only
	if err != nil {
		return nil, err
	}
	counts := map[uint64]uint32{}
	r := &SignaturesReport{VIP: vip, Buckets: n}
	for _, s := range socks {
		if !prismLive(s.State, s.Retrans) {
			continue
		}
		local, ok1 := netip.AddrFromSlice(s.ID.Source)
		client, ok2 := netip.AddrFromSlice(s.ID.Destination)
		if !ok1 || !ok2 || local.Unmap() != vip {
			continue
		}
		f := wire.Flow{Src: client.Unmap(), Dst: vip, SrcPort: s.ID.DestinationPort, DstPort: s.ID.SourcePort, Proto: unix.IPPROTO_TCP}
		counts[f.Signature()]++
		r.Total++
	}
	r.Sigs = make([]SigCount, 0, len(counts))
	for sig, c := range counts {
		r.Sigs = append(r.Sigs, SigCount{Sig: sig, Count: c})
	}
	slices.SortFunc(r.Sigs, func(a, b SigCount) int {
		if a.Sig < b.Sig {
			return -1
		}
		if a.Sig > b.Sig {
			return 1
		}
		return 0
	})
	return r, nil
}

func (s *Server) signatures(w http.ResponseWriter, r *http.Request) {
	vip, err := s.vip(r)
	if err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	if vip.Is6() {
		fail(w, http.StatusBadRequest, "vip %v: prism does not forward IPv6 (an IPv6 instance needs strategy beamer)", vip)
		return
	}
	b := r.URL.Query().Get("buckets")
	n, err := strconv.ParseUint(b, 10, 32)
	if err != nil || n == 0 || n > MaxBuckets {
		fail(w, http.StatusBadRequest, "buckets %q must be the instance's bucket count, 1–%d", b, MaxBuckets)
		return
	}
	select {
	case s.dumps <- struct{}{}:
		defer func() { <-s.dumps }()
	case <-r.Context().Done():
		return
	}
	rep, err := listSignatures(s.ns, vip, uint32(n))
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// Signatures asks the agent for the signatures of its live connections of
// vip. The answer is checked: right VIP and table size, signatures
// increasing and of vip, counts adding up.
func (c *Client) Signatures(ctx context.Context, agent netip.AddrPort, vip netip.Addr, n uint32) (*SignaturesReport, error) {
	q := url.Values{"vip": {vip.String()}, "buckets": {strconv.FormatUint(uint64(n), 10)}}
	var rep SignaturesReport
	if err := c.get(ctx, agent, SignaturesPath, q, &rep); err != nil {
		return nil, err
	}
	if rep.VIP != vip || rep.Buckets != n {
		return nil, fmt.Errorf("agent %v: answered for %v with %d buckets, asked %v with %d", agent, rep.VIP, rep.Buckets, vip, n)
	}
	a := vip.As4()
	id := uint64(a[2])<<8 | uint64(a[3])
	var sum uint64
	for i, sc := range rep.Sigs {
		if sc.Sig>>48 != id || (i > 0 && sc.Sig <= rep.Sigs[i-1].Sig) || sc.Count == 0 {
			return nil, fmt.Errorf("agent %v: bad signature list at entry %d (%#x, count %d)", agent, i, sc.Sig, sc.Count)
		}
		sum += uint64(sc.Count)
	}
	if sum != uint64(rep.Total) {
		return nil, fmt.Errorf("agent %v: counts add up to %d, total says %d", agent, sum, rep.Total)
	}
	return &rep, nil
}
