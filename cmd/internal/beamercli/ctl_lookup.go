package beamercli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi"
	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi/mgmtv1"
	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/spf13/cobra"
)

// lookupView is `ctl lookup -o json|yaml` (docs/operations.md).
type lookupView struct {
	Instance    string       `json:"instance"`
	Src         string       `json:"src"`
	SrcPort     uint16       `json:"src_port"`
	Dst         string       `json:"dst"`
	DstPort     uint16       `json:"dst_port"`
	Hash        uint32       `json:"hash"`
	Bucket      uint32       `json:"bucket"`
	Buckets     uint32       `json:"buckets"`
	Incarnation uint32       `json:"incarnation"`
	Generation  uint32       `json:"generation"`
	Current     lookupServer `json:"current"`
	// History: previous owners the mux's option names, most recent first;
	// an agent daisy-chains a packet it has no state for along it.
	History []lookupServer `json:"history"`
	// Changed (Unix seconds) is the bucket's latest move or re-stamp;
	// chaining is open until ChainOpenUntil (Unix seconds). Both are 0 for
	// a bucket without history.
	Changed        uint32 `json:"changed"`
	ChainOpenUntil uint32 `json:"chain_open_until"`
	ChainOpen      bool   `json:"chain_open"`
	// Note says when the bucket is not the whole answer (maglev, server-id ports).
	Note string `json:"note,omitempty"`
}

type lookupServer struct {
	ID      uint16 `json:"id"`
	Address string `json:"address"` // "" when the id is not in the table
}

// lookup computes what the mux does with the flow src → dst, as
// bpf/mux.c decides: the flow hash (pkg/wire, the same vectors as the C
// program) picks the bucket; the bucket names the current owner and history.
func lookup(tab *forwarding.Table, in *forwarding.Instance, src netip.AddrPort, dst netip.AddrPort, now time.Time) (*lookupView, error) {
	return lookupProto(tab, in, forwarding.TCP, src, dst, now)
}

// lookupProto is lookup for a TCP or a UDP flow (the hash is seeded with
// the protocol; UDP ports are never server ids).
func lookupProto(tab *forwarding.Table, in *forwarding.Instance, proto forwarding.Protocol, src netip.AddrPort, dst netip.AddrPort, now time.Time) (*lookupView, error) {
	if len(tab.Buckets) == 0 {
		return nil, fmt.Errorf("instance %s has an empty table", in.Name)
	}
	wp := uint8(wire.ProtoTCP)
	if proto == forwarding.UDP {
		wp = wire.ProtoUDP
	}
	f := wire.Flow{Src: src.Addr(), Dst: dst.Addr(), SrcPort: src.Port(), DstPort: dst.Port(), Proto: wp}
	v := &lookupView{Instance: in.Name, Src: src.Addr().String(), SrcPort: src.Port(), Dst: dst.Addr().String(), DstPort: dst.Port(),
		Hash: f.Hash(), Buckets: uint32(len(tab.Buckets)), Incarnation: tab.Incarnation, Generation: tab.Generation, History: []lookupServer{}}
	server := func(id forwarding.ServerID) lookupServer {
		s := lookupServer{ID: uint16(id)}
		if sv, ok := tab.Servers[id]; ok {
			s.Address = sv.Addr.String()
		}
		return s
	}
	switch ids := in.ServerIDs(); {
	case proto == forwarding.TCP && ids.Contains(dst.Port()):
		v.Current = server(forwarding.ServerID(dst.Port()))
		v.Note = fmt.Sprintf("port %d is in the server-id range %v: an MPTCP secondary subflow, the port is the server id, no bucket", dst.Port(), ids)
		return v, nil
	case !in.PortsOf(dst.Addr()).Open(proto, dst.Port()):
		return nil, fmt.Errorf("port %d is not a %s service port of %s on %v (%s): the mux drops it", dst.Port(), strings.ToUpper(string(proto)), in.Name, dst.Addr(), in.PortSummary())
	}
	v.Bucket = f.Bucket(uint32(len(tab.Buckets)))
	b := tab.Buckets[v.Bucket]
	v.Current = server(b.Current)
	for _, id := range b.History[:b.History.Len()] {
		v.History = append(v.History, server(id))
	}
	if len(v.History) > 0 {
		v.Changed = b.Changed
		v.ChainOpenUntil = b.Changed + uint32(in.ChainWindow.Seconds())
		v.ChainOpen = uint32(now.Unix()) < v.ChainOpenUntil
	}
	if in.Strategy.Spec().ConnTable {
		v.Note = fmt.Sprintf("%s: this is the table entry for a new connection; an established one follows the mux's connection table (see bpf/mux.c)", in.Strategy)
	}
	return v, nil
}

func printLookup(w io.Writer, v *lookupView) {
	// JoinHostPort brackets IPv6 addresses, as the command line takes them.
	fmt.Fprintf(w, "flow %s -> %s tcp: hash %#08x, bucket %d of %d (incarnation %d, generation %d)\n",
		net.JoinHostPort(v.Src, strconv.Itoa(int(v.SrcPort))), net.JoinHostPort(v.Dst, strconv.Itoa(int(v.DstPort))), v.Hash, v.Bucket, v.Buckets, v.Incarnation, v.Generation)
	name := func(s lookupServer) string {
		if s.ID == uint16(forwarding.NoServer) {
			return "none (unowned: the mux drops it)"
		}
		if s.Address == "" {
			return fmt.Sprintf("%d (not in the table)", s.ID)
		}
		return fmt.Sprintf("%d %s", s.ID, s.Address)
	}
	fmt.Fprintf(w, "current server: %s\n", name(v.Current))
	if len(v.History) == 0 {
		fmt.Fprintln(w, "history: none")
	} else {
		fmt.Fprint(w, "history (chain, most recent first):")
		for i, s := range v.History {
			sep := ","
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(w, "%s %s", sep, name(s))
		}
		state := "closed"
		if v.ChainOpen {
			state = "open"
		}
		fmt.Fprintf(w, "\nchanged %s, chaining window %s until %s\n", time.Unix(int64(v.Changed), 0).UTC().Format(time.RFC3339),
			state, time.Unix(int64(v.ChainOpenUntil), 0).UTC().Format(time.RFC3339))
	}
	if v.Note != "" {
		fmt.Fprintf(w, "note: %s\n", v.Note)
	}
}

// lookupJSON is the controller's side of ctl lookup (mgmtapi.StoreBackend).
func lookupJSON(ctx context.Context, st store.Store, root string, r *mgmtv1.LookupRequest) ([]byte, error) {
	src, err := netip.ParseAddrPort(r.GetClient())
	if err != nil || src.Addr().Zone() != "" || src.Addr().Is4In6() {
		return nil, fmt.Errorf("client %q: want ADDR:PORT, e.g. 198.18.1.5:40000 or [2001:db8:1::5]:40000", r.GetClient())
	}
	k := ring.InstanceKeys(root, r.GetInstance())
	in, err := ring.ReadInstance(ctx, st, k)
	if err != nil {
		return nil, err
	}
	tab, _, err := ring.NewFollower(st, k, ring.FollowerOptions{}).Load(ctx)
	if err != nil {
		return nil, err
	}
	if f := forwarding.FamilyOf(src.Addr()); f != in.Family() {
		return nil, fmt.Errorf("client %v is %v but instance %s is %v", src.Addr(), f, in.Name, in.Family())
	}
	dst := in.VIPs[0]
	if r.GetVip() != "" {
		if dst, err = netip.ParseAddr(r.GetVip()); err != nil {
			return nil, fmt.Errorf("--vip: %w", err)
		}
		if !slices.Contains(in.VIPs, dst) {
			return nil, fmt.Errorf("--vip %v is not a VIP of %s (%v)", dst, in.Name, in.VIPs)
		}
	}
	if r.GetDport() > 65535 {
		return nil, fmt.Errorf("--dport %d is not a port", r.GetDport())
	}
	p := uint16(r.GetDport())
	if p == 0 {
		p = in.FirstTCPPort()
	}
	proto := r.GetProto()
	if proto == "" {
		proto = string(forwarding.TCP)
	}
	if proto != string(forwarding.TCP) && proto != string(forwarding.UDP) {
		return nil, fmt.Errorf("--proto %q: want tcp or udp", proto)
	}
	v, err := lookupProto(tab, in, forwarding.Protocol(proto), src, netip.AddrPortFrom(dst, p), time.Now())
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func addCtlLookup(ctl *cobra.Command) {
	var dport uint16
	var proto string
	var vip string
	cmd := readCmd(ctl, "lookup NAME SRC:PORT|[SRC6]:PORT [--dport P] [--vip ADDR]", "Show which bucket and server a client's connection maps to, and the bucket's history (chain)", cobra.ExactArgs(2),
		func(ctx context.Context, cmd *cobra.Command, args []string, c *mgmtapi.Client, format string) error {
			src, err := netip.ParseAddrPort(args[1])
			if err != nil || src.Addr().Zone() != "" || src.Addr().Is4In6() {
				return fmt.Errorf("client %q: want ADDR:PORT, e.g. 198.18.1.5:40000 or [2001:db8:1::5]:40000", args[1])
			}
			if proto != string(forwarding.TCP) && proto != string(forwarding.UDP) {
				return fmt.Errorf("--proto %q: want tcp or udp", proto)
			}
			b, err := c.Lookup(ctx, &mgmtv1.LookupRequest{Instance: args[0], Client: args[1], Vip: vip, Dport: uint32(dport), Proto: proto})
			if err != nil {
				return err
			}
			var v lookupView
			if err := json.Unmarshal(b, &v); err != nil {
				return fmt.Errorf("the controller's lookup: %w", err)
			}
			return emit(cmd.OutOrStdout(), format, &v, func(w io.Writer) { printLookup(w, &v) })
		})
	cmd.Flags().Uint16Var(&dport, "dport", 0, "destination (service) port (default: the instance's first port)")
	cmd.Flags().StringVar(&vip, "vip", "", "destination VIP (default: the instance's first VIP)")
	cmd.Flags().StringVar(&proto, "proto", "tcp", "protocol of the flow: tcp or udp (the hash is seeded with it)")
}
