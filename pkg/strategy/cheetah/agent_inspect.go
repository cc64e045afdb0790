package cheetah

import (
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strings"

	"github.com/beamer-lb/beamer/pkg/dataplane/agentspi"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// VIPInspect is a VIP the agent writes Cheetah cookies for, as `beamer
// agent inspect` shows it (JSON key "cheetah"): its server slot and its
// keys by id and fingerprint, never the key bytes.
type VIPInspect struct {
	VIP  netip.Addr       `json:"vip"`
	ID   uint16           `json:"id"`
	Keys []cookie.KeyView `json:"keys"`
}

// Inspect lists the pinned agent's Cheetah VIPs with key fingerprints
// only: from the pinned state's directory, else the program's map.
func (agentSide) Inspect(h agentspi.InspectHost) (agentspi.Inspection, error) {
	m, err := h.Map("cheetah_vips")
	if err != nil || m == nil {
		return agentspi.Inspection{}, err
	}
	vs, err := readVIPs(h.Spec(), m)
	if err != nil {
		return agentspi.Inspection{}, err
	}
	if len(vs) == 0 {
		return agentspi.Inspection{}, nil
	}
	out := make([]VIPInspect, 0, len(vs))
	for _, v := range vs {
		out = append(out, VIPInspect{VIP: v.VIP, ID: v.ID, Keys: v.Keys.View()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].VIP.Less(out[j].VIP) })
	return agentspi.Inspection{Fields: map[string]any{"cheetah": out}, Text: func(w io.Writer) { printVIPs(w, out) }}, nil
}

func printVIPs(out io.Writer, vs []VIPInspect) {
	fmt.Fprintln(out, "\ncheetah (key ids and fingerprints, never the keys):")
	for _, c := range vs {
		var keys []string
		for _, k := range c.Keys {
			cur := ""
			if k.Current {
				cur = " (current)"
			}
			keys = append(keys, fmt.Sprintf("%d %s%s", k.ID, k.Fingerprint, cur))
		}
		fmt.Fprintf(out, "  %s  slot %d  keys %s\n", c.VIP, c.ID, strings.Join(keys, ", "))
	}
}
