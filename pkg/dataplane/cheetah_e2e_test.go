package dataplane

import (
	"fmt"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"golang.org/x/sys/unix"
)

// threeServers is a table with a, b and c active and the buckets dealt
// round.
func threeServers() *forwarding.Table {
	table := forwarding.NewTable(e2eBuckets)
	names := []string{"a", "b", "c"}
	for _, name := range names {
		table.Servers[e2eID[name]] = forwarding.Server{Addr: e2eServer[name], State: forwarding.Active}
	}
	for i := range table.Buckets {
		table.Buckets[i] = forwarding.Bucket{Current: e2eID[names[i%3]]}
	}
	return table
}

// setState publishes a generation where server name has the given state;
// a server that stops being active hands its buckets to the first active
// one, naming itself as previous owner, as the controller does.
func (e *e2eNet) setState(t *testing.T, name string, st forwarding.ServerState) {
	d := &forwarding.Delta{Servers: []forwarding.ServerChange{{ID: e2eID[name], Server: forwarding.Server{Addr: e2eServer[name], State: st}}}}
	if st != forwarding.Active {
		var heir forwarding.ServerID
		for _, n := range []string{"a", "b", "c"} {
			if n != name && e.table.Servers[e2eID[n]].State == forwarding.Active {
				heir = e2eID[n]
				break
			}
		}
		for i, b := range e.table.Buckets {
			if b.Current == e2eID[name] {
				d.Buckets = append(d.Buckets, forwarding.BucketChange{Index: uint32(i),
					Bucket: forwarding.Bucket{Current: heir, History: forwarding.Chain{b.Current}, Changed: uint32(time.Now().Unix())}})
			}
		}
	}
	e.publish(t, d)
}

func cheetahOptions(t *testing.T, policy forwarding.CheetahPolicy) *forwarding.CheetahOptions {
	k0, err := cookie.NewKey()
	must(t, err)
	k1, err := cookie.NewKey()
	must(t, err)
	return &forwarding.CheetahOptions{Policy: policy, Keys: cookie.Keys{Current: 0, Keys: [2]cookie.Key{k0, k1}}}
}

// TestCheetahEndToEnd carries real Linux TCP connections (timestamps on, as
// Linux clients have them) through a Cheetah mux and three agents while the
// server set changes generation after generation: round robin spreads new
// connections over the active servers, every open connection keeps reaching
// the server its cookie names (retired, or active again), no cookie is bad;
// a client without timestamps is served through the Beamer buckets; and
// while a SYN flood fills the servers' SYN queues, Linux answers with SYN
// cookies and connections still complete and carry data (the agent hands
// the stack the SYN-cookie bits of the echo).
func TestCheetahEndToEnd(t *testing.T) {
	e := newE2EWith(t, e2eConfig{strategy: forwarding.StrategyCheetah, muxes: 1, table: threeServers,
		servers: []string{"a", "b", "c"}, cheetah: cheetahOptions(t, forwarding.CheetahRR)})

	type tracked struct {
		c      *echoConn
		server string
	}
	var open []tracked
	dialSome := func(n int) map[string]int {
		seen := map[string]int{}
		for i := 0; i < n; i++ {
			c := e.dial(t, false)
			s, err := c.ask(fmt.Sprintf("hello %d", len(open)), answerWithin)
			if err != nil {
				t.Fatalf("new connection %d: %v", len(open), err)
			}
			seen[s]++
			open = append(open, tracked{c, s})
		}
		return seen
	}
	checkAll := func(step string, within time.Duration) {
		t.Helper()
		for i, o := range open {
			s, err := o.c.ask(fmt.Sprintf("%s %d", step, i), within)
			if err != nil {
				t.Fatalf("%s: connection %d (on %s) broke: %v", step, i, o.server, err)
			}
			if s != o.server {
				t.Fatalf("%s: connection %d moved from %s to %s", step, i, o.server, s)
			}
		}
	}

	// Round robin keeps one position per mux CPU: each CPU's share is
	// spread evenly, so the servers' counts differ by at most the CPUs
	// that took SYNs (docs/strategy-cheetah.md).
	if seen := dialSome(9); len(seen) != 3 || maxMinusMin(seen) > runtime.NumCPU() {
		t.Fatalf("round robin over a, b, c gave %v (%d CPUs)", seen, runtime.NumCPU())
	}
	// DIP updates, one generation at a time; open connections must stay.
	steps := []struct {
		name  string
		state forwarding.ServerState
	}{{"b", forwarding.Retired}, {"a", forwarding.Retired}, {"b", forwarding.Active}, {"c", forwarding.Retired}, {"a", forwarding.Active}}
	for i, st := range steps {
		e.setState(t, st.name, st.state)
		checkAll(fmt.Sprintf("after update %d", i+1), answerWithin)
		active := map[string]bool{}
		for _, n := range []string{"a", "b", "c"} {
			active[n] = e.table.Servers[e2eID[n]].State == forwarding.Active
		}
		for s := range dialSome(4) {
			if !active[s] {
				t.Fatalf("after update %d a new connection went to %s, which is not active", i+1, s)
			}
		}
	}
	checkAll("at the end", answerWithin)

	// MPTCP: the first subflow by policy and cookie, the secondary one by
	// server id (VIP:id, announced by the server), both to the same server.
	mp := e.dial(t, true)
	first, err := mp.ask("mptcp", answerWithin)
	must(t, err)
	subflows := 0
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && subflows == 0; time.Sleep(50 * time.Millisecond) {
		subflows, err = mptcpSubflows(mp.Conn)
		must(t, err)
	}
	if subflows < 1 {
		t.Fatal("no secondary MPTCP subflow was established through the cheetah mux")
	}
	for i := 0; i < 10; i++ {
		if who, err := mp.ask(fmt.Sprint("mp-", i), answerWithin); err != nil || who != first {
			t.Fatalf("mptcp exchange %d: served by %q, %v (first subflow on %s)", i, who, err, first)
		}
	}

	c, err := e.mux.CountersOf(forwarding.StrategyCheetah)
	must(t, err)
	if c["bad_cookie"] != 0 || c["cookie_hit"] == 0 || c["syn"] < 29 || c["fast_parse"] == 0 {
		t.Fatalf("mux cheetah counters %v", c)
	}
	var cookies, echoes uint64
	for name := range e.servers {
		ac, err := cheetah.AgentCounters(e.agents[name])
		must(t, err)
		cookies += ac["egress_cookie"]
		echoes += ac["ingress_no_echo"]
	}
	if cookies == 0 || echoes == 0 {
		t.Fatalf("agents wrote %d cookies and restored %d echoes", cookies, echoes)
	}

	// A client without timestamps: the Beamer buckets.
	must(t, e.client.Sysctl("net.ipv4.tcp_timestamps", "0"))
	before := c["fallback"]
	nots := e.dial(t, false)
	if _, err := nots.ask("no timestamps", answerWithin); err != nil {
		t.Fatalf("client without timestamps: %v", err)
	}
	must(t, e.client.Sysctl("net.ipv4.tcp_timestamps", "1"))
	c, err = e.mux.CountersOf(forwarding.StrategyCheetah)
	must(t, err)
	if c["fallback"] <= before {
		t.Fatalf("no fallback counted for a client without timestamps: %v", c)
	}

	// A SYN flood: spoofed SYNs (with timestamps, so the policy spreads
	// them) fill every server's SYN queue, and Linux answers with SYN
	// cookies; real connections opened during the flood complete from the
	// cookie and carry data both ways.
	//
	// What is checked is that they complete and carry data, not how fast:
	// the servers answer and re-answer 15,000 spoofed SYNs meanwhile, and
	// on a machine busy with other tests that burst can overflow a CPU's
	// backlog queue. A lost segment then costs a retransmission timeout,
	// 1 s or more on a SYN-cookie connection (no RTT sample yet, and
	// doubling), so each step has floodPatience.
	const floodPatience = 20 * time.Second
	synFlood(t, e, 15000)
	for i := 0; i < 6; i++ {
		sc := e.dialWithin(t, false, floodPatience)
		big := make([]byte, 200000)
		for j := range big {
			big[j] = 'a' + byte(j%26)
		}
		if s, err := sc.ask(string(big), floodPatience); err != nil {
			t.Fatalf("connection %d under the SYN flood: %v\n%s", i, err, floodReport(e))
		} else if e.table.Servers[e2eID[s]].State != forwarding.Active {
			t.Fatalf("SYN-cookie connection went to %s, not active", s)
		}
	}
	var syncookies uint64
	for name := range e.servers {
		ac, err := cheetah.AgentCounters(e.agents[name])
		must(t, err)
		syncookies += ac["ingress_syncookie"]
	}
	t.Logf("SYN-cookie echoes seen by the agents: %d", syncookies)
	if syncookies < 6 {
		t.Fatalf("agents saw %d SYN-cookie echoes for 6 connections under the flood", syncookies)
	}
	checkAll("after the SYN-cookie connections", floodPatience)
}

// synFlood sends n spoofed SYNs (sources 198.18.0.200–249, timestamps on)
// to the VIP from the client namespace through a raw socket: bounded in
// count, addressed only inside the test's namespaces.
func synFlood(t *testing.T, e *e2eNet, n int) {
	t.Helper()
	must(t, e.client.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		dst := &unix.SockaddrInet4{Addr: e2eVIP.As4()}
		for i := 0; i < n; i++ {
			src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, 0, byte(200 + i%50)}), uint16(10000+i/50))
			seg := wiretest.TSSegment(src, netip.AddrPortFrom(e2eVIP, 80), true, false, uint32(i), 0, true)
			if err := unix.Sendto(fd, seg, 0, dst); err != nil {
				return fmt.Errorf("flood packet %d: %w", i, err)
			}
		}
		return nil
	}))
}

func maxMinusMin(counts map[string]int) int {
	lo, hi := -1, 0
	for _, n := range counts {
		hi = max(hi, n)
		if lo < 0 || n < lo {
			lo = n
		}
	}
	return hi - lo
}

// floodReport is what a failing flood run shows: each namespace's TCP
// counters that say where a segment went (SYN cookies sent, taken or
// failed, listen drops, retransmissions), and the agents' and mux's own.
func floodReport(e *e2eNet) string {
	var b strings.Builder
	counters := []string{"TcpExtSyncookies*", "TcpExtListen*", "TcpExtTCPTimeouts", "TcpRetransSegs", "TcpExtTCPReqQFullDoCookies", "TcpExtTCPReqQFullDrop", "TcpExtPAWS*", "TcpExtTCPBacklogDrop", "TcpInErrs", "TcpExtTCPTimeWaitOverflow"}
	for _, name := range []string{"a", "b", "c"} {
		out, err := e.servers[name].Run("nstat", append([]string{"-az"}, counters...)...)
		fmt.Fprintf(&b, "server %s: %s%v\n", name, out, err)
		if ac, err := cheetah.AgentCounters(e.agents[name]); err == nil {
			fmt.Fprintf(&b, "agent %s cheetah counters: %v\n", name, ac)
		}
	}
	out, err := e.client.Run("nstat", append([]string{"-az"}, counters...)...)
	fmt.Fprintf(&b, "client: %s%v\n", out, err)
	if mc, err := e.mux.CountersOf(forwarding.StrategyCheetah); err == nil {
		fmt.Fprintf(&b, "mux cheetah counters: %v\n", mc)
	}
	out, _ = e.fabric.Run("ip", "-s", "link")
	fmt.Fprintf(&b, "fabric links:\n%s", out)
	if stat, err := os.ReadFile("/proc/net/softnet_stat"); err == nil {
		fmt.Fprintf(&b, "softnet_stat (per CPU: processed, dropped, squeezed):\n%s", stat)
	}
	return b.String()
}
