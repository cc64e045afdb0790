package muxd

import (
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// What decides the FIB's answer besides routes, neighbours and links, and
// which the follower's netlink subscriptions do not tell: policy rules
// (the program's lookup is from the mux's address; vishvananda/netlink has
// no subscription to them, so here is one that says only that some rule
// of either family changed) and a device's IPv6 MTU (no event at all:
// checked every nextHopResyncEvery).

// ruleSubscribe signals ch (cap 1; a pending signal stands for any number
// of changes) when a policy rule is added or removed in ns, until done is
// closed or the socket fails (overran): then it closes ch.
func ruleSubscribe(ns netns.NsHandle, ch chan<- struct{}, done <-chan struct{}) error {
	s, err := nl.SubscribeAt(ns, netns.None(), unix.NETLINK_ROUTE, unix.RTNLGRP_IPV4_RULE, unix.RTNLGRP_IPV6_RULE)
	if err != nil {
		return err
	}
	go func() {
		<-done
		s.Close()
	}()
	go func() {
		defer close(ch)
		for {
			msgs, from, err := s.Receive()
			if err != nil {
				return
			}
			if from.Pid != nl.PidKernel {
				continue
			}
			for _, m := range msgs {
				if m.Header.Type == unix.RTM_NEWRULE || m.Header.Type == unix.RTM_DELRULE {
					select {
					case ch <- struct{}{}:
					default: // one is pending already
					}
				}
			}
		}
	}()
	return nil
}

// onRule: a policy rule changed. Every published answer may have: all are
// withdrawn (their packets ask the FIB meanwhile) and resolved again.
func (f *nextHopFollower) onRule(struct{}) {
	f.withdrawAll()
	f.startPass(true)
}

// checkMTU6 withdraws the published IPv6 servers behind a device whose
// IPv6 MTU changed since the last check (no netlink event tells: a router
// advertisement or a sysctl changes it silently); they are resolved again
// in the pass that follows.
func (f *nextHopFollower) checkMTU6() {
	now := map[int]int{}
	var withdraw []netip.Addr
	for a, via := range f.via {
		if a.Is4() {
			continue
		}
		mtu, ok := now[via.LinkIndex]
		if !ok {
			var err error
			if mtu, err = dataplane.DeviceMTU6(f.ns, via.LinkIndex); err != nil {
				mtu = -1 // unreadable (device gone): its link update withdraws it
			}
			now[via.LinkIndex] = mtu
		}
		if was, ok := f.mtu6[via.LinkIndex]; ok && was != mtu {
			withdraw = append(withdraw, a)
		}
	}
	for _, a := range withdraw {
		f.withdraw(a)
	}
	if len(withdraw) > 0 {
		f.d.mux.FlushNextHops()
	}
	f.mtu6 = now
}
