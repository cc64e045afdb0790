package storetest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// StartZooKeeperEnsemble starts an ensemble of n ZooKeeper servers
// (Debian package zookeeper) on free 127.0.0.1 ports, each with its own
// data directory and myid, all listed in every zoo.cfg (server.N lines).
// The servers are started together (none serves before a quorum runs) and
// killed when the test ends; Server.Stop kills one member, Server.Start
// restarts it with its data.
func StartZooKeeperEnsemble(t testing.TB, n int) []*Server {
	t.Helper()
	requireZooKeeper(t)
	addrs := FreeAddrs(t, 3*n) // client, quorum, election ports, all at once: none repeats
	var servers []string
	for i := range n {
		_, quorum, _ := net.SplitHostPort(addrs[3*i+1])
		_, election, _ := net.SplitHostPort(addrs[3*i+2])
		servers = append(servers, fmt.Sprintf("server.%d=127.0.0.1:%s:%s", i+1, quorum, election))
	}
	ss := make([]*Server, n)
	for i := range n {
		dir := t.TempDir()
		data := filepath.Join(dir, "data")
		if err := os.MkdirAll(data, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(fmt.Sprintf("%d\n", i+1)), 0o600); err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(addrs[3*i])
		cfg := strings.Join(append([]string{
			"tickTime=500", // session timeouts down to 1 s for tests
			"initLimit=20", // 10 s for a follower to sync with a new leader
			"syncLimit=6",  // 3 s without the leader and a follower drops out
			"dataDir=" + data,
			"clientPort=" + port,
			"clientPortAddress=127.0.0.1",
			"admin.enableServer=false",
			"maxClientCnxns=0",
			"4lw.commands.whitelist=srvr",
		}, append(servers, "")...), "\n")
		cfgPath := filepath.Join(dir, "zoo.cfg")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		env := []string{"ZOO_LOG_DIR=" + dir, "JVMFLAGS=-Xmx256m -XX:+UseSerialGC", "ZOO_LOG4J_PROP=WARN,CONSOLE"}
		ss[i] = &Server{Addr: addrs[3*i], args: []string{zkServerScript, "start-foreground", cfgPath}, env: env,
			log: filepath.Join(dir, "zookeeper.log"), t: t}
	}
	for _, s := range ss {
		s.launch()
		t.Cleanup(s.Stop)
	}
	for _, s := range ss {
		s.waitListening()
	}
	return ss
}

// ZooKeeperServers is the client address list of ss, the one at first
// first (a controller lists its own host's member first).
func ZooKeeperServers(ss []*Server, first int) []string {
	out := []string{ss[first].Addr}
	for i, s := range ss {
		if i != first {
			out = append(out, s.Addr)
		}
	}
	return out
}
