package storetest

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// StartZooKeeperTLS starts a standalone ZooKeeper serving only TLS on a
// free 127.0.0.1 port (its secureClientPort, Netty), requiring client
// certificates signed by c.CA. Keys and certificates are the PEM files of
// c: ZooKeeper reads PEM key stores itself (ssl.keyStore.type=PEM).
func StartZooKeeperTLS(t testing.TB, c *Certs) *Server {
	t.Helper()
	requireZooKeeper(t)
	dir := t.TempDir()
	// A PEM key store holds the private key and the certificate together.
	key, err := os.ReadFile(c.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := os.ReadFile(c.ServerCert)
	if err != nil {
		t.Fatal(err)
	}
	keyStore := filepath.Join(dir, "server-keystore.pem")
	if err := os.WriteFile(keyStore, append(key, cert...), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	cfg := strings.Join([]string{
		"tickTime=500",
		"initLimit=10",
		"syncLimit=5",
		"dataDir=" + filepath.Join(dir, "data"),
		"secureClientPort=" + port,
		"secureClientPortAddress=127.0.0.1",
		"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
		"ssl.keyStore.location=" + keyStore,
		"ssl.keyStore.type=PEM",
		"ssl.trustStore.location=" + c.CA,
		"ssl.trustStore.type=PEM",
		"ssl.clientAuth=need",
		"admin.enableServer=false",
		"maxClientCnxns=0",
		"",
	}, "\n")
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// Debian's zookeeper.jar lists netty's handler but not the codec and
	// resolver it needs, which only the TLS (Netty) server loads: a second
	// -cp, after the script's, adds them (the java launcher keeps the last).
	cp := []string{"/etc/zookeeper/conf", "/usr/share/java/zookeeper.jar"}
	for _, jar := range []string{"netty-codec", "netty-resolver", "netty-transport-native-unix-common"} {
		p := "/usr/share/java/" + jar + ".jar"
		if _, err := os.Stat(p); err != nil {
			needServer(t, "%s is missing (Debian package libnetty-java, needed by ZooKeeper's TLS server)", p)
		}
		cp = append(cp, p)
	}
	env := []string{"ZOO_LOG_DIR=" + dir, "JVMFLAGS=-Xmx256m -XX:+UseSerialGC -cp " + strings.Join(cp, ":"), "ZOO_LOG4J_PROP=WARN,CONSOLE"}
	return start(t, addr, filepath.Join(dir, "zookeeper.log"), env, zkServerScript, "start-foreground", cfgPath)
}

// LogTail is the end of the server's log, for failure messages.
func (s *Server) LogTail() string { return tail(s.log) }
