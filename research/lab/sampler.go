package lab

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Sample is the lab once a second.
type Sample struct {
	T          float64            `json:"t"`    // seconds since the load started
	Gbps       float64            `json:"gbps"` // received by the clients
	ServerMbps map[string]float64 `json:"server_mbps"`
	Muxes      int                `json:"muxes"` // next hops of the router's route to the VIP
	Broken     int                `json:"broken"`
	FloodPPS   float64            `json:"flood_pps,omitempty"`
	MCT        int                `json:"mct_entries,omitempty"` // prism: MCT size on a running mux
}

// sampler records the timeline and shows progress.
type sampler struct {
	r     *runner
	quit  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	tl    []Sample
	isTTY bool
}

func newSampler(r *runner) *sampler {
	s := &sampler{r: r, quit: make(chan struct{}), done: make(chan struct{}), isTTY: isTerminal(r.out)}
	go s.run()
	return s
}

func (s *sampler) run() {
	defer close(s.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	lastBytes := uint64(0)
	lastServer := map[string]uint64{}
	lastFlood := uint64(0)
	for {
		select {
		case <-s.quit:
			if s.isTTY {
				fmt.Fprint(s.r.out, "\r\033[K")
			}
			return
		case <-t.C:
		}
		r := s.r
		smp := Sample{T: time.Since(r.start).Seconds(), ServerMbps: map[string]float64{}}
		b := r.load.Bytes()
		smp.Gbps = float64(b-lastBytes) * 8 / 1e9
		lastBytes = b
		for i, sv := range r.lab.servers {
			if sv.http == nil {
				continue
			}
			name := fmt.Sprintf("srv%d", i)
			sent := sv.http.sent.Load()
			smp.ServerMbps[name] = float64(sent-lastServer[name]) * 8 / 1e6
			lastServer[name] = sent
		}
		if hops, err := r.lab.VIPNextHops(); err == nil {
			smp.Muxes = len(hops)
		}
		if _, ok := strategies[r.p.Strategy].(mctKeeper); ok {
			smp.MCT, _ = r.lab.MCTEntries()
		}
		snap := r.load.brokenCount()
		smp.Broken = snap
		if f := r.flood; f != nil {
			sent := f.Sent()
			smp.FloodPPS = float64(sent - lastFlood)
			lastFlood = sent
		}
		s.mu.Lock()
		s.tl = append(s.tl, smp)
		s.mu.Unlock()
		s.progress(smp)
	}
}

// progress shows one status line: rewritten in place on a terminal, every
// fifth second otherwise.
func (s *sampler) progress(smp Sample) {
	if s.r.out == nil || (!s.isTTY && int(smp.T)%5 != 0) {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  [%3.0fs/%3.0fs] %6.2f Gb/s  muxes %d  broken %d", smp.T, s.r.sc.Duration().Seconds(), smp.Gbps, smp.Muxes, smp.Broken)
	if smp.FloodPPS > 0 {
		fmt.Fprintf(&b, "  flood %.0f SYN/s", smp.FloodPPS)
	}
	if s.isTTY {
		fmt.Fprintf(s.r.out, "\r\033[K%s", b.String())
	} else {
		fmt.Fprintln(s.r.out, b.String())
	}
}

func (s *sampler) stop() []Sample {
	select {
	case <-s.quit:
	default:
		close(s.quit)
	}
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tl
}
