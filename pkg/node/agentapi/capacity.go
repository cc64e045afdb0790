package agentapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Capacity (issue 14, Spotlight's AWFD): GET /v1/capacity answers how much
// more traffic this server can take now, in bits per second.
//
// What is measured and why. Spotlight estimates a server's capacity as
// 1/(mean processing time) and its available capacity as capacity − load
// (§IV-B). For the services Beamer fronts — direct server return, so a
// server's replies leave through its own NIC — the load is the bytes the
// server sends, and its capacity is the rate its bottleneck lets it send:
//
//   - NIC: the transmit rate of the server's interface (kernel counters,
//     netlink) against the interface's shaped rate (a tbf or htb root
//     qdisc: how operators and the lab give servers unequal links) or a
//     configured rate. Headroom = rate − transmit rate.
//   - CPU: when the server's cgroup (v2) has a CPU quota (cpu.max), the
//     CPU-bound rate is the transmit rate scaled by quota/usage: bytes per
//     CPU-second times the CPU-seconds allowed — Spotlight's 1/t for a
//     server whose processing is its CPU. cpu.pressure (the run queue's
//     stall share, PSI) is reported too: a server stalled on CPU is full
//     even if its usage reads below the quota.
//
// Capacity is the smaller of the two known rates; available = capacity −
// transmit rate, never below 0. Rates are measured over the last
// SampleWindow by a sampler the first request starts (polls every few
// hundred ms keep it warm; it stops after a minute without requests).
const (
	CapacityPath = "/v1/capacity"
	// SampleEvery and SampleWindow: how often the sampler reads counters
	// and over how long a rate is taken (short enough to follow a 250 ms
	// poll, long enough to smooth a burst of segments).
	SampleEvery  = 50 * time.Millisecond
	SampleWindow = 250 * time.Millisecond
	samplerIdle  = time.Minute
)

// CapacityReport answers GET /v1/capacity.
type CapacityReport struct {
	// Iface is the interface measured; NICRate its shaped or configured
	// rate (0: unknown); TxRate what it sent over WindowMillis.
	Iface   string  `json:"iface"`
	NICRate float64 `json:"nic_bps"`
	TxRate  float64 `json:"tx_bps"`
	// CPU, when the agent's cgroup has a quota: cores allowed and used,
	// and the share of time runnable tasks waited (PSI some, %).
	CPUQuota    float64 `json:"cpu_quota_cores,omitempty"`
	CPUUsed     float64 `json:"cpu_used_cores,omitempty"`
	CPUPressure float64 `json:"cpu_pressure_pct,omitempty"`
	// Capacity and Available in bits/s: the result the controller uses.
	Capacity     float64 `json:"capacity_bps"`
	Available    float64 `json:"available_bps"`
	WindowMillis int64   `json:"window_ms"`
}

// CapacityOptions say where capacity is measured.
type CapacityOptions struct {
	// Iface is the server's interface (the agent's).
	Iface string
	// RateBps is the NIC rate when no tbf/htb qdisc says it (0: unknown).
	RateBps float64
	// Cgroup is the cgroup v2 directory whose CPU is the server's
	// (default: the agent's own, from /proc/self/cgroup).
	Cgroup string
}

type capSample struct {
	at      time.Time
	tx      uint64
	cpuUsec uint64
}

// sampler reads the counters every SampleEvery while asked.
type sampler struct {
	o    CapacityOptions
	ns   netns.NsHandle
	mu   sync.Mutex
	ring []capSample
	last time.Time // latest request
	run  bool
	err  error
}

func newSampler(o CapacityOptions, ns netns.NsHandle) *sampler {
	if o.Cgroup == "" {
		o.Cgroup = ownCgroup()
	}
	return &sampler{o: o, ns: ns}
}

// ownCgroup is the agent's cgroup v2 directory ("" when unknown).
func ownCgroup() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Join("/sys/fs/cgroup", rest)
		}
	}
	return ""
}

func (s *sampler) read() (capSample, error) {
	smp := capSample{at: time.Now()}
	err := inNamespace(s.ns, func() error {
		l, err := netlink.LinkByName(s.o.Iface)
		if err != nil {
			return fmt.Errorf("interface %q: %w", s.o.Iface, err)
		}
		if st := l.Attrs().Statistics; st != nil {
			smp.tx = st.TxBytes
		}
		return nil
	})
	smp.cpuUsec, _ = cgroupUsage(s.o.Cgroup)
	return smp, err
}

func (s *sampler) loop() {
	t := time.NewTicker(SampleEvery)
	defer t.Stop()
	keep := int(SampleWindow/SampleEvery) + 1
	for range t.C {
		smp, err := s.read()
		s.mu.Lock()
		s.err = err
		if err == nil {
			s.ring = append(s.ring, smp)
			if len(s.ring) > keep {
				s.ring = s.ring[len(s.ring)-keep:]
			}
		}
		if time.Since(s.last) > samplerIdle {
			s.run, s.ring = false, nil
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
	}
}

// report is the capacity over the sampler's window; the first request
// starts the sampler and waits one window.
func (s *sampler) report(ctx context.Context) (*CapacityReport, error) {
	s.mu.Lock()
	s.last = time.Now()
	if !s.run {
		s.run = true
		first, err := s.read()
		if err != nil {
			s.run = false
			s.mu.Unlock()
			return nil, err
		}
		s.ring = []capSample{first}
		go s.loop()
	}
	s.mu.Unlock()
	for {
		s.mu.Lock()
		ring, err := s.ring, s.err
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if len(ring) >= 2 && ring[len(ring)-1].at.Sub(ring[0].at) >= SampleWindow/2 {
			return s.compute(ring[0], ring[len(ring)-1]), nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(SampleEvery):
		}
	}
}

func (s *sampler) compute(a, b capSample) *CapacityReport {
	dt := b.at.Sub(a.at).Seconds()
	r := &CapacityReport{Iface: s.o.Iface, WindowMillis: b.at.Sub(a.at).Milliseconds()}
	r.TxRate = float64(b.tx-a.tx) * 8 / dt
	r.NICRate = s.o.RateBps
	if q := shapedRate(s.ns, s.o.Iface); q > 0 {
		r.NICRate = q
	}
	capacity := math.Inf(1)
	if r.NICRate > 0 {
		capacity = r.NICRate
	}
	if quota := cgroupQuota(s.o.Cgroup); quota > 0 {
		r.CPUQuota = quota
		r.CPUUsed = float64(b.cpuUsec-a.cpuUsec) / 1e6 / dt
		r.CPUPressure = cgroupPressure(s.o.Cgroup)
		// Below a tenth of a core the ratio says nothing: the server is
		// idle, and its NIC (if known) bounds it.
		if r.CPUUsed > 0.1 && r.TxRate > 0 {
			capacity = min(capacity, r.TxRate*quota/r.CPUUsed)
		}
	}
	if math.IsInf(capacity, 1) {
		return r // capacity unknown: Capacity = Available = 0, see handler
	}
	r.Capacity = capacity
	r.Available = max(capacity-r.TxRate, 0)
	return r
}

// shapedRate is the rate of a tbf or htb root qdisc on iface, bits/s.
func shapedRate(ns netns.NsHandle, iface string) float64 {
	var rate float64
	inNamespace(ns, func() error {
		l, err := netlink.LinkByName(iface)
		if err != nil {
			return err
		}
		qs, err := netlink.QdiscList(l)
		if err != nil {
			return err
		}
		for _, q := range qs {
			if q.Attrs().Parent != netlink.HANDLE_ROOT {
				continue
			}
			switch q := q.(type) {
			case *netlink.Tbf:
				rate = float64(q.Rate) * 8
			case *netlink.Htb:
				rate = htbRate(l, q)
			}
		}
		return nil
	})
	return rate
}

// htbRate is the ceiling of the htb root's top class (the link's share).
func htbRate(l netlink.Link, q *netlink.Htb) float64 {
	cs, err := netlink.ClassList(l, q.Handle)
	if err != nil {
		return 0
	}
	for _, c := range cs {
		if h, ok := c.(*netlink.HtbClass); ok && h.Parent == q.Handle {
			return float64(h.Ceil) * 8
		}
	}
	return 0
}

func cgroupUsage(dir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("cpu.stat: no usage_usec")
}

// cgroupQuota is cpu.max as cores (0: no quota).
func cgroupQuota(dir string) float64 {
	if dir == "" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(dir, "cpu.max"))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 || f[0] == "max" {
		return 0
	}
	q, err1 := strconv.ParseFloat(f[0], 64)
	p, err2 := strconv.ParseFloat(f[1], 64)
	if err1 != nil || err2 != nil || p <= 0 {
		return 0
	}
	return q / p
}

// cgroupPressure is cpu.pressure "some avg10" (%).
func cgroupPressure(dir string) float64 {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.pressure"))
	if err != nil {
		return 0
	}
	for _, f := range strings.Fields(string(b)) {
		if v, ok := strings.CutPrefix(f, "avg10="); ok {
			x, _ := strconv.ParseFloat(v, 64)
			return x
		}
	}
	return 0
}

func (s *Server) capacity(w http.ResponseWriter, r *http.Request) {
	if s.sampler == nil {
		fail(w, http.StatusNotFound, "capacity is not measured by this agent (no interface configured)")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*SampleWindow+time.Second)
	defer cancel()
	rep, err := s.sampler.report(ctx)
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "capacity: %v", err)
		return
	}
	if rep.Capacity == 0 {
		fail(w, http.StatusServiceUnavailable, "capacity of %s unknown: no tbf/htb rate, no configured rate, no CPU quota", rep.Iface)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// Capacity asks the agent for its server's available capacity. The answer
// is checked: finite, non-negative, available ≤ capacity.
func (c *Client) Capacity(ctx context.Context, agent netip.AddrPort) (*CapacityReport, error) {
	var rep CapacityReport
	if err := c.get(ctx, agent, CapacityPath, nil, &rep); err != nil {
		return nil, err
	}
	for _, v := range []float64{rep.Capacity, rep.Available, rep.TxRate} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, fmt.Errorf("agent %v: capacity report out of range: %+v", agent, rep)
		}
	}
	if rep.Available > rep.Capacity || rep.Capacity == 0 {
		return nil, fmt.Errorf("agent %v: available %.0f of capacity %.0f", agent, rep.Available, rep.Capacity)
	}
	return &rep, nil
}
