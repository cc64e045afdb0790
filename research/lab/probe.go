package lab

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/research/netlab"
)

func netipAddrPort80() netip.AddrPort { return netip.AddrPortFrom(VIP, 80) }

// fetchOnce downloads the file once over a new connection from a client,
// and names the server that answered.
func fetchOnce(ctx context.Context, ns *netlab.Namespace, vip netip.Addr, timeout time.Duration) (string, error) {
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := ns.Do(func() (err error) {
			c, err = (&net.Dialer{Timeout: timeout}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+netip.AddrPortFrom(vip, 80).String()+"/file", nil)
	resp, err := (&http.Client{Transport: tr, Timeout: timeout}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return "", err
	}
	return resp.Header.Get("X-Server"), nil
}

// checkReachable waits until every client downloads the file through the
// VIP: the path client → router → mux → server → client works.
func (l *Lab) checkReachable(ctx context.Context, within time.Duration) error {
	for i, c := range l.clients {
		deadline := time.Now().Add(within)
		for {
			_, err := fetchOnce(ctx, c, l.vip(), 3*time.Second)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("client %d cannot download through %v after %v: %w (mux counters: %s)", i, l.vip(), within, err, nonZero(l.MuxCounters()))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}

// nonZero formats the non-zero counters, name=value.
func nonZero(c map[string]uint64) string {
	var parts []string
	for _, k := range sortedKeys(c) {
		if c[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, c[k]))
		}
	}
	return strings.Join(parts, " ")
}

// checkVIPOnly proves a VIP-bound service is what the scenario claims:
// nothing answers on DIP:80 (from the controller's namespace, where a
// DIP:port health check comes from), while the server answers on VIP:80
// locally.
func (l *Lab) checkVIPOnly(i int) error {
	s, err := l.server(i)
	if err != nil {
		return err
	}
	dial := func(ns *netlab.Namespace, to netip.Addr) error {
		return ns.Do(func() error {
			c, err := net.DialTimeout(l.tcp(), netip.AddrPortFrom(to, 80).String(), time.Second)
			if err == nil {
				c.Close()
			}
			return err
		})
	}
	if dial(l.ctl, l.dip(i)) == nil {
		return fmt.Errorf("server %d's service is meant to listen on the VIP only, but answers on %v:80", i, l.dip(i))
	}
	if err := dial(s.ns, l.vip()); err != nil {
		return fmt.Errorf("server %d's service does not answer on %v:80 locally: %w", i, l.vip(), err)
	}
	return nil
}
