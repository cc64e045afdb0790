package cheetah

import (
	"encoding/binary"
	"slices"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/model/modelspi"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// modelDecision mirrors bpf/strategy/cheetah.h: without a timestamp
// option the Beamer strategy; a SYN goes to the policy's pick (round robin
// over the active servers by id, or the bucket's owner for hash; wrr and p2c
// are the mux's only); any other segment to the server its echoed cookie
// names, or is dropped as a bad cookie.
type modelDecision struct{}

// beamer is the Beamer strategy's decision, which Cheetah's packets
// without a timestamp follow (registered from its own package, looked up
// when used).
func (modelDecision) beamer() modelspi.Strategy {
	s, ok := modelspi.Lookup(forwarding.StrategyBeamer)
	if !ok {
		panic("cheetah: the cheetah strategy needs the beamer strategy, which is not in this build")
	}
	return s
}

func init() {
	modelspi.Register(forwarding.StrategyCheetah, modelDecision{})
}

// tsecr finds the timestamp option as the program does (any layout).
func tsecr(tcp []byte) (uint32, bool) {
	end := int(tcp[12]>>4) * 4
	for off := 20; off < end && off < len(tcp); {
		switch tcp[off] {
		case 0:
			return 0, false
		case 1:
			off++
			continue
		}
		if off+1 >= end {
			return 0, false
		}
		l := int(tcp[off+1])
		if tcp[off] == 8 {
			if l != 10 || off+10 > end {
				return 0, false
			}
			return binary.BigEndian.Uint32(tcp[off+6:]), true
		}
		if l < 2 {
			return 0, false
		}
		off += l
	}
	return 0, false
}

func (c modelDecision) Decide(m modelspi.Mux, vip *modelspi.VIP, p modelspi.Packet) (forwarding.Server, *wire.Option, string, bool) {
	if p.TCP == nil { // UDP, or an ICMP message steered by its quote
		return c.beamer().Decide(m, vip, p)
	}
	echo, ok := tsecr(p.TCP)
	if !ok {
		return c.beamer().Decide(m, vip, p)
	}
	o := vip.Instance.Cheetah
	var id forwarding.ServerID
	if p.SYN {
		switch o.Policy {
		case forwarding.CheetahHash:
			b, _, why, ok := modelspi.Owner(vip, p.Flow)
			if !ok {
				return forwarding.Server{}, nil, why, false
			}
			id = b.Current
		default: // rr
			var active []forwarding.ServerID
			for sid, s := range vip.Table.Servers {
				if s.State == forwarding.Active && sid <= cookie.MaxID {
					active = append(active, sid)
				}
			}
			if len(active) == 0 {
				return forwarding.Server{}, nil, "drop_no_owner", false
			}
			slices.Sort(active)
			id = active[m.RoundRobin(vip.Instance.Name, len(active))]
		}
	} else {
		keys := o.Keys
		if st := vip.Table.Cheetah; st != nil {
			keys = st.Keys // the ring's keys win: a rotation arrives as a generation
		}
		sid, _ := keys.Decode(echo, p.Flow)
		id = forwarding.ServerID(sid)
	}
	s, ok := vip.Table.Servers[id]
	if !ok || id == forwarding.NoServer {
		return forwarding.Server{}, nil, "drop_unknown_server", false
	}
	return s, nil, "fwd_server_id", true
}
