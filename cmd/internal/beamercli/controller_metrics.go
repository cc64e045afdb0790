package beamercli

import (
	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// serveControllerMetrics serves the controller's gauges (fail-open
// instances, servers by health, buckets held open) on addr, if set.
func serveControllerMetrics(addr string, o *controller.RunOptions) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	reg := prometheus.NewRegistry()
	o.Metrics = controller.NewMetrics(reg)
	s, err := metrics.Serve(addr, reg, func() error { return nil })
	if err != nil {
		return nil, err
	}
	return func() { s.Close() }, nil
}
