package zkstore

import (
	"crypto/tls"
	"net"
	"time"

	"github.com/go-zookeeper/zk"
)

// ZooKeeper (3.5+) serves TLS on its secureClientPort (Netty connection
// factory). go-zookeeper has no TLS option of its own but takes a dialer:
// ours makes the TCP connection and the handshake with the standard
// library, and the session runs inside it unchanged. With ssl.clientAuth
// on the server, the client certificate is checked there.

// tlsDialer returns a zk dialer that wraps each connection in TLS.
func tlsDialer(cfg *tls.Config) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c := cfg.Clone()
		if c.ServerName == "" {
			c.ServerName, _, _ = net.SplitHostPort(address)
		}
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, c)
	}
}

// options lists connection options (go-zookeeper does not export their
// type, so the list is built by inference).
func options[T any](o ...T) []T { return o }
