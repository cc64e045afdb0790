package partition

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"syscall"
	"time"

	"github.com/beamer-lb/beamer/research/lab"
	"github.com/beamer-lb/beamer/research/netlab"
)

// Kind is a kind of fault the rig injects.
type Kind string

const (
	// MemberCut takes a controller host's only link down: its store
	// member and controller lose everyone (muxes included).
	MemberCut Kind = "member-cut"
	// LeaderIsolated cuts the elected controller's host from the other
	// controller hosts only (blackhole routes both ways), not from the
	// muxes, the operator or the servers.
	LeaderIsolated Kind = "leader-isolated"
	// LeaderKilled SIGKILLs the elected controller (with the embedded
	// store, its member too) and starts it again when the fault heals.
	LeaderKilled Kind = "leader-killed"
	// LeaderPaused SIGSTOPs the elected controller, SIGCONT at heal.
	LeaderPaused Kind = "leader-paused"
	// QuorumLost takes the links of two of the three controller hosts
	// down: no majority until the fault heals.
	QuorumLost Kind = "quorum-lost"
	// DiskFailed makes a store member's disk fail (the elected
	// controller's host half the time, else another): every further
	// write and fsync of the member fails with EIO (ext4's shutdown on
	// the member's own filesystem, lab.Options.ControlHostDisks). etcd
	// ends the member, and with it the controller that embeds it; a
	// ZooKeeper server exits. Healing replaces the disk as an operator
	// would: the member stopped, the filesystem mounted again (its
	// journal replayed), the member started again.
	DiskFailed Kind = "disk-failed"
)

// Kinds are every kind, in the order a run without a seed would inject them.
var Kinds = []Kind{MemberCut, LeaderIsolated, LeaderKilled, LeaderPaused, QuorumLost, DiskFailed}

// Fault is one fault as injected.
type Fault struct {
	Kind     Kind
	Hosts    []int // controller hosts it struck
	Leader   int   // the elected controller's host when it was injected (-1: none known)
	Injected time.Time
	Healed   time.Time
	// Note is what the rig saw of the fault's effect when healing (a
	// disk-failed member: whether and how it exited).
	Note string
	heal func() error
}

func (f Fault) String() string {
	s := fmt.Sprintf("%s on hosts %v (leader %d) for %v", f.Kind, f.Hosts, f.Leader, f.Healed.Sub(f.Injected).Round(time.Millisecond))
	if f.Note != "" {
		s += "; " + f.Note
	}
	return s
}

// inject strikes with a fault of kind k; leader is the elected
// controller's host (-1 if none is known: a random host is struck).
func inject(l *lab.Lab, k Kind, leader int, rng *rand.Rand) (*Fault, error) {
	n := l.ControlHosts()
	target := leader
	if target < 0 {
		target = rng.IntN(n)
	}
	f := &Fault{Kind: k, Leader: leader, Hosts: []int{target}}
	var err error
	switch k {
	case MemberCut:
		if target == leader && n > 1 && rng.IntN(2) == 0 {
			target = (target + 1 + rng.IntN(n-1)) % n // a follower, half the time
			f.Hosts = []int{target}
		}
		f.heal, err = linksDown(l, f.Hosts)
	case QuorumLost:
		other := (target + 1 + rng.IntN(n-1)) % n
		f.Hosts = []int{target, other}
		f.heal, err = linksDown(l, f.Hosts)
	case DiskFailed:
		if target == leader && n > 1 && rng.IntN(2) == 0 {
			target = (target + 1 + rng.IntN(n-1)) % n
			f.Hosts = []int{target}
		}
		if err = l.FailDisk(target); err == nil {
			f.heal = func() error {
				f.Note = "member still running at heal"
				if exit := l.MemberExit(target); exit != "" {
					f.Note = exit
				} else if mode := l.ZooKeeperMode(target); mode != "" {
					f.Note += " (" + mode + ")"
				}
				return l.ReplaceDisk(target)
			}
		}
	case LeaderIsolated:
		f.heal, err = isolate(l, target)
	case LeaderKilled:
		if err = l.SignalController(target, syscall.SIGKILL); err == nil {
			f.heal = func() error { return l.RestartController(target) }
		}
	case LeaderPaused:
		if err = l.SignalController(target, syscall.SIGSTOP); err == nil {
			f.heal = func() error { return l.SignalController(target, syscall.SIGCONT) }
		}
	default:
		return nil, fmt.Errorf("unknown fault kind %q", k)
	}
	f.Injected = time.Now()
	return f, err
}

// Heal undoes the fault.
func (f *Fault) Heal() error {
	err := f.heal()
	f.Healed = time.Now()
	return err
}

// linksDown takes the fabric link of each host down; healing brings them
// up again.
func linksDown(l *lab.Lab, hosts []int) (func() error, error) {
	set := func(state string) error {
		for _, i := range hosts {
			ns, err := l.ControlHost(i)
			if err != nil {
				return err
			}
			if _, err := ns.Run("ip", "link", "set", "eth0", state); err != nil {
				return err
			}
		}
		return nil
	}
	return func() error { return set("up") }, set("down")
}

// isolate cuts host i from the other controller hosts with blackhole
// routes on both sides (nftables is not on every lab machine; a route
// drops as surely and needs nothing more than iproute2).
func isolate(l *lab.Lab, i int) (func() error, error) {
	type route struct {
		ns  *netlab.Namespace
		dst netip.Addr
	}
	var routes []route
	me, err := l.ControlHost(i)
	if err != nil {
		return nil, err
	}
	for j := range l.ControlHosts() {
		if j == i {
			continue
		}
		other, _ := l.ControlHost(j)
		routes = append(routes, route{me, lab.ControlHostAddr(j)}, route{other, lab.ControlHostAddr(i)})
	}
	var added []route
	heal := func() error {
		var first error
		for _, r := range added {
			if _, err := r.ns.Run("ip", "route", "del", "blackhole", r.dst.String()+"/32"); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	for _, r := range routes {
		if _, err := r.ns.Run("ip", "route", "add", "blackhole", r.dst.String()+"/32"); err != nil {
			return heal, err
		}
		added = append(added, r)
	}
	return heal, nil
}
