package lab

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/beamer-lb/beamer/research/netlab"
)

// scrapeCounters reads one labelled counter family from the /metrics of
// the daemon in ns (mux or agent), keyed by the value of its first label,
// e.g. beamer_agent_packets_total → {"chained": 312, …}.
func scrapeCounters(ns *netlab.Namespace, family string) (map[string]uint64, error) {
	return scrapeLabel(ns, family, "")
}

// scrapeLabel reads one counter family from the /metrics of the daemon in
// ns, summed by the value of one label ("" for each series' first label).
func scrapeLabel(ns *netlab.Namespace, family, label string) (map[string]uint64, error) {
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
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scraping %s in %s: %w", family, ns.Name, err)
	}
	out := map[string]uint64{}
	f, ok := families[family]
	if !ok {
		return out, nil
	}
	for _, m := range f.GetMetric() {
		for i, l := range m.GetLabel() {
			if (label == "" && i == 0) || l.GetName() == label {
				out[l.GetValue()] += uint64(m.GetCounter().GetValue() + m.GetGauge().GetValue())
				break
			}
		}
	}
	return out, nil
}
