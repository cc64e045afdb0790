package dataplane

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// Packet capture from the data path (bpf/include/capture.h): the running
// daemon pins its programs' filter map (capture_cfg) and ring buffer
// (capture_ring) in its pin directory; a capture, in another process,
// opens them, writes the filter and reads the records until its bound,
// then writes the filter back to zero (capture off).

// Capture map pins, in the daemon's pin directory.
const (
	captureCfgPin  = "capture_cfg"
	captureRingPin = "capture_ring"
)

// CapturePoint is where in a program a packet was captured.
type CapturePoint uint32

// The capture points (enum capture_point).
const (
	CaptureMuxRx        CapturePoint = 1
	CaptureMuxTx        CapturePoint = 2
	CaptureAgentRx      CapturePoint = 3
	CaptureAgentUp      CapturePoint = 4
	CaptureAgentChain   CapturePoint = 5
	CaptureAgentXDPRx   CapturePoint = 6
	CaptureAgentXDPUp   CapturePoint = 7
	captureLastPoint                 = CaptureAgentXDPUp
	CaptureSnapMax                   = 4096 // CAPTURE_SNAP_MAX
	captureRecordHeader              = 24   // CAPTURE_REC_HDR
)

var capturePointNames = map[CapturePoint]string{
	CaptureMuxRx: "mux-rx", CaptureMuxTx: "mux-tx",
	CaptureAgentRx: "agent-rx", CaptureAgentUp: "agent-up", CaptureAgentChain: "agent-chain",
	CaptureAgentXDPRx: "agent-xdp-rx", CaptureAgentXDPUp: "agent-xdp-up",
}

// MuxCapturePoints and AgentCapturePoints are each daemon's points, in order.
var (
	MuxCapturePoints   = []CapturePoint{CaptureMuxRx, CaptureMuxTx}
	AgentCapturePoints = []CapturePoint{CaptureAgentRx, CaptureAgentUp, CaptureAgentChain, CaptureAgentXDPRx, CaptureAgentXDPUp}
)

func (p CapturePoint) String() string {
	if n, ok := capturePointNames[p]; ok {
		return n
	}
	return fmt.Sprintf("point-%d", uint32(p))
}

// ParseCapturePoint reads a point's name (mux-rx, agent-up...).
func ParseCapturePoint(s string) (CapturePoint, error) {
	for p, n := range capturePointNames {
		if n == s {
			return p, nil
		}
	}
	var names []string
	for p := CaptureMuxRx; p <= captureLastPoint; p++ {
		names = append(names, p.String())
	}
	return 0, fmt.Errorf("capture point %q: want one of %s", s, strings.Join(names, ", "))
}

// CaptureFilter says which packets a capture takes, by the innermost
// packet's header (the client's, inside any encapsulation). Zero fields
// match anything.
type CaptureFilter struct {
	Proto            uint8 // IP protocol number; 0 any
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16
	Points           []CapturePoint // empty: every point
	GUEPort          uint16         // UDP destination port read as GUE (0: none)
}

// CaptureOptions bound a capture; every bound is enforced by the kernel
// too (remaining count, deadline).
type CaptureOptions struct {
	Filter   CaptureFilter
	Count    int           // records, 1..CaptureMaxCount
	Duration time.Duration // 0: none
	Snaplen  int           // bytes kept per packet, 1..CaptureSnapMax
}

// CaptureMaxCount is the most records one capture may ask for.
const CaptureMaxCount = 1_000_000

// CaptureRecord is one captured packet.
type CaptureRecord struct {
	Time    time.Time
	Point   CapturePoint
	Ifindex int
	Length  int    // the packet's length
	Data    []byte // its first bytes (at most the snaplen)
}

// Capture is a running capture on a daemon's pinned maps.
type Capture struct {
	on         *ebpf.Map // capture_on: the word the hooks read
	cfg        *ebpf.Map
	ring       *ringbuf.Reader
	lock       *os.File
	left       int
	bootToWall time.Duration
	deadline   time.Time
}

// ErrCaptureBusy: another capture runs on the same daemon.
var ErrCaptureBusy = errors.New("another capture is running on this daemon (one at a time)")

func (o CaptureOptions) encode(now time.Duration) (muxCaptureCfg, error) {
	var c muxCaptureCfg
	if o.Count < 1 || o.Count > CaptureMaxCount {
		return c, fmt.Errorf("capture count %d: want 1..%d", o.Count, CaptureMaxCount)
	}
	if o.Snaplen < 1 || o.Snaplen > CaptureSnapMax {
		return c, fmt.Errorf("snaplen %d: want 1..%d", o.Snaplen, CaptureSnapMax)
	}
	if o.Duration < 0 {
		return c, fmt.Errorf("capture duration %v is negative", o.Duration)
	}
	f := o.Filter
	c.Enabled, c.Snaplen, c.Remaining = 1, uint32(o.Snaplen), int64(o.Count)
	if o.Duration > 0 {
		c.DeadlineNs = uint64(now + o.Duration)
	}
	for _, p := range f.Points {
		if p < CaptureMuxRx || p > captureLastPoint {
			return c, fmt.Errorf("capture point %d unknown", p)
		}
		c.Points |= 1 << p
	}
	c.GuePort = netOrder16(f.GUEPort)
	if f.Proto != 0 {
		c.Match |= captureMatchProto
		c.Proto = f.Proto
	}
	if f.SrcPort != 0 {
		c.Match |= captureMatchSport
		c.Sport = netOrder16(f.SrcPort)
	}
	if f.DstPort != 0 {
		c.Match |= captureMatchDport
		c.Dport = netOrder16(f.DstPort)
	}
	for _, a := range []struct {
		addr netip.Addr
		bit  uint32
		to   *[16]uint8
	}{{f.Src, captureMatchSrc, &c.Src}, {f.Dst, captureMatchDst, &c.Dst}} {
		if !a.addr.IsValid() {
			continue
		}
		addr := a.addr.Unmap()
		fam := uint8(6)
		if addr.Is4() {
			fam = 4
			b := addr.As4()
			copy(a.to[:], b[:])
		} else {
			*a.to = addr.As16()
		}
		if c.Family != 0 && c.Family != fam {
			return c, fmt.Errorf("capture filter: source and destination are of different families (%v, %v)", f.Src, f.Dst)
		}
		c.Family = fam
		c.Match |= a.bit
	}
	return c, nil
}

// CAPTURE_M_* of capture.h.
const (
	captureMatchSrc   = 0x1
	captureMatchDst   = 0x2
	captureMatchSport = 0x4
	captureMatchDport = 0x8
	captureMatchProto = 0x10
)

// netOrder16 is p as the kernel's __be16 field holds it in memory.
func netOrder16(p uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], p)
	return binary.NativeEndian.Uint16(b[:])
}

// StartCapture opens the capture maps a running daemon pinned in pinDir,
// takes the daemon's capture lock, writes the filter and starts reading.
// Close ends it (the filter back to off); call it on every path.
func StartCapture(pinDir string, o CaptureOptions) (*Capture, error) {
	if pinDir == "" {
		return nil, errors.New("capture needs the daemon's pin directory (a daemon started with --pin-dir - cannot be captured from)")
	}
	lock, err := os.Open(pinDir)
	if err != nil {
		return nil, fmt.Errorf("no daemon pinned in %s (is it running, in this network namespace, with this --pin-dir?): %w", pinDir, err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrCaptureBusy
		}
		return nil, fmt.Errorf("capture lock on %s: %w", pinDir, err)
	}
	c := &Capture{lock: lock, left: o.Count}
	fail := func(err error) (*Capture, error) {
		c.Close()
		return nil, err
	}
	if c.on, err = ebpf.LoadPinnedMap(filepath.Join(pinDir, captureOnPin), nil); err != nil {
		return fail(fmt.Errorf("the daemon in %s pins no capture map (started by a beamer without capture?): %w", pinDir, err))
	}
	if c.cfg, err = ebpf.LoadPinnedMap(filepath.Join(pinDir, captureCfgPin), nil); err != nil {
		return fail(fmt.Errorf("the daemon in %s pins no capture map (started by a beamer without capture?): %w", pinDir, err))
	}
	ring, err := ebpf.LoadPinnedMap(filepath.Join(pinDir, captureRingPin), nil)
	if err != nil {
		return fail(fmt.Errorf("the daemon in %s pins no capture ring: %w", pinDir, err))
	}
	c.ring, err = ringbuf.NewReader(ring)
	ring.Close() // the reader holds its own reference (mmap)
	if err != nil {
		return fail(fmt.Errorf("capture ring: %w", err))
	}
	mono, err := monotonicNow()
	if err != nil {
		return fail(err)
	}
	c.bootToWall = time.Duration(time.Now().UnixNano()) - mono
	cfg, err := o.encode(mono)
	if err != nil {
		return fail(err)
	}
	if o.Duration > 0 {
		c.deadline = time.Now().Add(o.Duration)
	}
	// Records a capture that was killed left in the ring are not ours.
	c.drain()
	if err := c.cfg.Update(uint32(0), &cfg, ebpf.UpdateAny); err != nil {
		return fail(fmt.Errorf("writing the capture filter: %w", err))
	}
	if err := c.on.Update(uint32(0), uint32(1), ebpf.UpdateAny); err != nil {
		return fail(fmt.Errorf("turning capture on: %w", err))
	}
	return c, nil
}

func monotonicNow() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, fmt.Errorf("clock: %w", err)
	}
	return time.Duration(ts.Nano()), nil
}

// drain drops what is in the ring now.
func (c *Capture) drain() {
	c.ring.SetDeadline(time.Now())
	for {
		if _, err := c.ring.Read(); err != nil {
			break
		}
	}
	c.ring.SetDeadline(time.Time{})
}

// ErrCaptureDone: the capture reached its count or its duration.
var ErrCaptureDone = errors.New("capture bound reached")

// Next waits for the next record: ErrCaptureDone at the bound, an error
// wrapping os.ErrDeadlineExceeded when stop (if set) passes first, and
// ringbuf's closed error after Close.
func (c *Capture) Next(stop time.Time) (CaptureRecord, error) {
	for {
		if c.left <= 0 {
			return CaptureRecord{}, ErrCaptureDone
		}
		d := stop
		if !c.deadline.IsZero() && (d.IsZero() || c.deadline.Before(d)) {
			d = c.deadline
		}
		c.ring.SetDeadline(d)
		rec, err := c.ring.Read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if !c.deadline.IsZero() && !time.Now().Before(c.deadline) {
				return CaptureRecord{}, ErrCaptureDone
			}
			// The kernel's count is spent and the ring is empty: what
			// was not read was lost (Lost), nothing more will come.
			if cfg, ok := c.kernelCfg(); ok && cfg.Remaining <= 0 {
				return CaptureRecord{}, ErrCaptureDone
			}
		}
		if err != nil {
			return CaptureRecord{}, err
		}
		r, ok := c.decode(rec.RawSample)
		if !ok {
			continue // not a record of ours: the ring is shared with nothing else, but be safe
		}
		c.left--
		return r, nil
	}
}

func (c *Capture) decode(b []byte) (CaptureRecord, bool) {
	if len(b) < captureRecordHeader {
		return CaptureRecord{}, false
	}
	ts := binary.NativeEndian.Uint64(b[0:])
	length := binary.NativeEndian.Uint32(b[8:])
	caplen := binary.NativeEndian.Uint32(b[12:])
	point := binary.NativeEndian.Uint32(b[16:])
	ifindex := binary.NativeEndian.Uint32(b[20:])
	if uint64(caplen) > uint64(len(b)-captureRecordHeader) || caplen > length {
		return CaptureRecord{}, false
	}
	data := make([]byte, caplen)
	copy(data, b[captureRecordHeader:])
	return CaptureRecord{
		Time:  time.Unix(0, int64(ts)+int64(c.bootToWall)),
		Point: CapturePoint(point), Ifindex: int(ifindex), Length: int(length), Data: data,
	}, true
}

// Lost is how many matching packets the kernel could not write (the ring
// was full: the reader fell behind).
func (c *Capture) Lost() uint64 {
	cfg, _ := c.kernelCfg()
	return cfg.Lost
}

func (c *Capture) kernelCfg() (muxCaptureCfg, bool) {
	var cfg muxCaptureCfg
	if c.cfg == nil || c.cfg.Lookup(uint32(0), &cfg) != nil {
		return cfg, false
	}
	return cfg, true
}

// Close turns capture off (the filter map back to zero), closes the maps
// and releases the lock. Safe to call more than once.
func (c *Capture) Close() error {
	var errs []error
	if c.on != nil {
		errs = append(errs, c.on.Update(uint32(0), uint32(0), ebpf.UpdateAny))
		c.on.Close()
		c.on = nil
	}
	if c.cfg != nil {
		errs = append(errs, c.cfg.Update(uint32(0), &muxCaptureCfg{}, ebpf.UpdateAny))
		c.cfg.Close()
		c.cfg = nil
	}
	if c.ring != nil {
		c.ring.Close()
		c.ring = nil
	}
	if c.lock != nil {
		c.lock.Close() // releases the flock
		c.lock = nil
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("turning capture off: %w", err)
	}
	return nil
}

// CaptureState is what the kernel's capture filter holds.
type CaptureState struct {
	Enabled   bool
	Remaining int64  // records the kernel will still write
	Lost      uint64 // matching packets the ring had no room for
}

// ReadCaptureState reads the capture maps pinned in pinDir: whether a
// capture is on (the hooks' word or the filter), and its kernel-side count.
func ReadCaptureState(pinDir string) (CaptureState, error) {
	on, err := ebpf.LoadPinnedMap(filepath.Join(pinDir, captureOnPin), nil)
	if err != nil {
		return CaptureState{}, err
	}
	defer on.Close()
	m, err := ebpf.LoadPinnedMap(filepath.Join(pinDir, captureCfgPin), nil)
	if err != nil {
		return CaptureState{}, err
	}
	defer m.Close()
	var word uint32
	var cfg muxCaptureCfg
	if err := on.Lookup(uint32(0), &word); err != nil {
		return CaptureState{}, err
	}
	if err := m.Lookup(uint32(0), &cfg); err != nil {
		return CaptureState{}, err
	}
	return CaptureState{Enabled: word != 0 || cfg.Enabled != 0, Remaining: cfg.Remaining, Lost: cfg.Lost}, nil
}

// pinCapture pins the maps a capture needs in a daemon's pin directory:
// the data section holding capture_on, and the filter and ring buffer.
// Each start pins its own program's, fresh (capture off), over a
// predecessor's.
func pinCapture(dir string, on, cfg, ring *ebpf.Map) error {
	if on == nil {
		return fmt.Errorf("the program was loaded without its %s section", captureOnSection)
	}
	return pinMaps(dir, map[string]*ebpf.Map{captureOnPin: on, captureCfgPin: cfg, captureRingPin: ring})
}

// captureOnSection is the data section (and map) of capture_on.
const captureOnSection = ".data.capture"

// captureOnPin is the pin name of that map.
const captureOnPin = "capture_on"

// captureData is capture_on's data section, assigned with the program's
// other objects at load: the generated objects name no data-section maps,
// and opening one by id afterwards takes CAP_SYS_ADMIN, which the packaged
// daemons do not have (systemd/beamer-mux.service).
type captureData struct {
	Section *ebpf.Map `ebpf:".data.capture"`
}

func (c captureData) close() {
	if c.Section != nil {
		c.Section.Close()
	}
}
