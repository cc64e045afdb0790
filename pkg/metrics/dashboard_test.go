package metrics_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// registered is the name of every Beamer metric: the names the daemons'
// sources register (Name: fields, NewDesc, NewCounterCollector — the mux
// and agent registries need a loaded BPF program to build, so their names
// are read from the code that builds them), checked against a real
// registry where one can be built without BPF (the controller's).
// Metric: is a strategy's decision counters (muxspi.CounterSet), which the
// mux daemon registers under that name.
var registration = regexp.MustCompile(`(?:Name:\s*|Metric:\s*|NewDesc\(\s*|NewCounterCollector\(\s*)"(beamer_[a-z0-9_]+)"`)

func sourceNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range registration.FindAllSubmatch(b, -1) {
			names[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// recorder is a Registerer that keeps the descriptions of what registers.
type recorder struct{ descs []string }

func (r *recorder) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		r.descs = append(r.descs, d.String())
	}
	return nil
}
func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		r.Register(c)
	}
}
func (r *recorder) Unregister(prometheus.Collector) bool { return false }

var descName = regexp.MustCompile(`fqName: "([^"]+)"`)

// TestDashboardMetricsExist: every metric a query of dashboards/beamer.json
// names exists (Beamer's, or the standard Go/process/build-info collectors
// every daemon registers), and no Beamer metric has a label named
// "instance" (Prometheus sets that one to the scraped target).
func TestDashboardMetricsExist(t *testing.T) {
	known := sourceNames(t)
	for _, want := range []string{"beamer_mux_packets_total", "beamer_agent_packets_total", "beamer_mux_generation", "beamer_controller_servers"} {
		if !known[want] {
			t.Fatalf("source scan found no %s: the scan is broken (found %v)", want, known)
		}
	}
	// The controller's real registry agrees with the scan.
	var rec recorder
	controller.NewMetrics(&rec)
	for _, d := range rec.descs {
		name := descName.FindStringSubmatch(d)[1]
		if !known[name] {
			t.Errorf("controller registers %s, the source scan missed it", name)
		}
		if strings.Contains(d, `variableLabels: {instance`) || strings.Contains(d, `,instance`) {
			t.Errorf("label instance: %s", d)
		}
	}
	// The standard collectors, from a real registry.
	reg := prometheus.NewRegistry()
	if err := metrics.RegisterStandard(reg); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		known[mf.GetName()] = true
	}
	for _, want := range []string{"go_goroutines", "process_resident_memory_bytes", "go_build_info"} {
		if !known[want] {
			t.Errorf("standard collectors: no %s", want)
		}
	}

	b, err := os.ReadFile("../../dashboards/beamer.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	metricRef := regexp.MustCompile(`\b(?:beamer|go|process)_[a-z0-9_]+\b`)
	queries := 0
	for _, p := range dash.Panels {
		for _, q := range p.Targets {
			queries++
			for _, name := range metricRef.FindAllString(q.Expr, -1) {
				base := name
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(name, suffix); ok && known[b] {
						base = b
					}
				}
				if !known[base] {
					t.Errorf("panel %q: query %q names %s, which no daemon registers", p.Title, q.Expr, name)
				}
			}
			if regexp.MustCompile(`by \([^)]*\binstance\b[^)]*\)`).MatchString(q.Expr) && strings.Contains(q.Expr, "beamer_controller") {
				t.Errorf("panel %q groups controller metrics by instance (the target), not lb_instance: %s", p.Title, q.Expr)
			}
		}
	}
	if queries < 10 {
		t.Errorf("dashboard has %d queries", queries)
	}
}

// TestNoInstanceLabel: no Beamer metric declares a label named "instance".
func TestNoInstanceLabel(t *testing.T) {
	labels := regexp.MustCompile(`\[\]string\{[^}]*"instance"[^}]*\}`)
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "prometheus.") && labels.Match(b) {
			t.Errorf("%s: a metric label named \"instance\" (use lb_instance)", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
