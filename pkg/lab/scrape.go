package lab

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/netlab"
)

// scrapeCounters reads one labelled counter family from the /metrics of
// the daemon in ns (mux or agent), e.g. beamer_agent_packets_total →
// {"chained": 312, …}.
func scrapeCounters(ns *netlab.Namespace, family string) (map[string]uint64, error) {
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := ns.Do(func() (err error) {
			c, err = (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("scraping %s in %s: %w", family, ns.Name, err)
	}
	defer resp.Body.Close()
	out := map[string]uint64{}
	s := bufio.NewScanner(resp.Body)
	for s.Scan() {
		// beamer_agent_packets_total{decision="chained"} 312
		name, rest, ok := strings.Cut(s.Text(), "{")
		if !ok || name != family {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		_, label, ok2 := strings.Cut(labels, `="`)
		if !ok || !ok2 {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err == nil {
			out[strings.TrimSuffix(label, `"`)] += uint64(v)
		}
	}
	return out, s.Err()
}
