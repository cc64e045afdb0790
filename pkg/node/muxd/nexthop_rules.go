package muxd

import (
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Policy rules decide the FIB's answer as routes do (the program's lookup
// is from the mux's address), and vishvananda/netlink has no subscription
// to them: this one says only that some rule of either family changed.

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
