package metrics_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
)

// documentedMetrics reads the table of docs/operations.md's "Metrics"
// section: every metric name of a row's first column, with the labels of
// its third.
func documentedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "\n## Metrics\n")
	if start < 0 {
		t.Fatal(`docs/operations.md: no "## Metrics" section`)
	}
	section := doc[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	code := regexp.MustCompile("`([^`]+)`")
	docs := map[string][]string{}
	for _, line := range strings.Split(section, "\n") {
		cols := strings.Split(line, "|")
		if len(cols) < 5 || !strings.Contains(cols[1], "`beamer_") {
			continue
		}
		var labels []string
		for _, m := range code.FindAllStringSubmatch(cols[3], -1) {
			labels = append(labels, m[1])
		}
		for _, m := range code.FindAllStringSubmatch(cols[1], -1) {
			docs[m[1]] = labels
		}
	}
	return docs
}

var daemonMetric = regexp.MustCompile(`^beamer_(mux|agent|controller)_`)

// collectorLabel: the label of the counter collectors of the mux's and
// agent's BPF counters (metrics.NewCounterCollector(name, help, label, ...)).
var collectorLabel = regexp.MustCompile(`NewCounterCollector\(\s*"(beamer_[a-z0-9_]+)",\s*"[^"]*",\s*"([a-z_]+)"`)

// TestEveryMetricDocumented: every metric a daemon registers (the source
// scan of the dashboard test, the controller's real registry) has a row in
// docs/operations.md's metrics table, with the labels it really has where
// the test can know them (the controller's registry, the counter
// collectors); and every row names a metric that exists.
func TestEveryMetricDocumented(t *testing.T) {
	// The scan also finds BPF program names (Name: "beamer_vethpass"):
	// metrics are the daemons'.
	known := map[string]bool{}
	for name := range sourceNames(t) {
		if daemonMetric.MatchString(name) {
			known[name] = true
		}
	}
	docs := documentedMetrics(t)
	if len(docs) < 20 {
		t.Fatalf("docs/operations.md: only %d metrics found in the table: the parser is broken", len(docs))
	}
	for name := range known {
		if _, ok := docs[name]; !ok {
			t.Errorf("%s is registered but not in docs/operations.md's metrics table", name)
		}
	}
	for name := range docs {
		if !known[name] {
			t.Errorf("docs/operations.md documents %s, which no daemon registers", name)
		}
	}
	checkLabels := func(name string, labels []string) {
		t.Helper()
		got, ok := docs[name]
		if !ok {
			return // reported above
		}
		slices.Sort(labels)
		got = slices.Sorted(slices.Values(got))
		if !slices.Equal(got, labels) {
			t.Errorf("%s: docs/operations.md gives labels %v, the metric has %v", name, got, labels)
		}
	}
	var rec recorder
	controller.NewMetrics(&rec)
	variable := regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	for _, d := range rec.descs {
		var labels []string
		if m := variable.FindStringSubmatch(d); m != nil && m[1] != "" {
			labels = strings.Split(m[1], ",")
		}
		checkLabels(descName.FindStringSubmatch(d)[1], labels)
	}
	for _, dir := range []string{"../node/muxd", "../node/agentd"} {
		files, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if !strings.HasSuffix(f.Name(), ".go") || strings.HasSuffix(f.Name(), "_test.go") {
				continue
			}
			b, err := os.ReadFile(dir + "/" + f.Name())
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range collectorLabel.FindAllSubmatch(b, -1) {
				checkLabels(string(m[1]), []string{string(m[2])})
			}
		}
	}
}
