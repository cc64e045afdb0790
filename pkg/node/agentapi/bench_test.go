package agentapi

import (
	"net"
	"testing"
	"time"
)

// BenchmarkConnectionsReport: one GET /v1/connections (sock_diag dump,
// hashing, JSON both ways) on a server holding 2000 live connections of
// the VIP, as the controller polls a previous owner. Prints ms/op.
func BenchmarkConnectionsReport(b *testing.B) {
	l := newServerLab(b)
	const n = 2000
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := l.dialCli(ctx(b), "tcp4", vip.String()+":80")
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
	}
	time.Sleep(200 * time.Millisecond) // accepts finish
	b.ResetTimer()
	for b.Loop() {
		rep, err := l.client.Connections(ctx(b), l.api, vip, 6400)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Total < n*9/10 {
			b.Fatalf("report counts %d of %d connections", rep.Total, n)
		}
	}
}
