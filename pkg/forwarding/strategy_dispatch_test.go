package forwarding

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Shared code knows strategies only through the strategy interfaces of its
// layer (StrategySpec here, controller.Strategy, the mux loader's
// muxStrategy, the mux daemon's daemonStrategy, model's strategy,
// lab.Strategy): a comparison of, or a switch on, a strategy name belongs in
// a strategy's own file or folder. dispatchPatterns are what such a check
// looks like in this code base; comparing with "" (was a strategy given?)
// is no dispatch and is not matched.
var dispatchPatterns = []*regexp.Regexp{
	// x.Strategy == y, strategy != y (y not ""), either way round.
	regexp.MustCompile(`(?i)strategy\s*[!=]=\s*[^"\s]`),
	regexp.MustCompile(`(?i)strategy\s*[!=]=\s*"[^"]`),
	regexp.MustCompile(`[!=]=\s*(forwarding\.)?Strategy(Beamer|Maglev|Prism|Cheetah|AWFD)\b`),
	regexp.MustCompile(`[!=]=\s*"(beamer|maglev|prism|cheetah|awfd)\b`),
	regexp.MustCompile(`\bcase\s.*\bStrategy(Beamer|Maglev|Prism|Cheetah|AWFD)\b`),
	regexp.MustCompile(`\bcase\s+"(beamer|maglev|prism|cheetah|awfd)\b`),
	regexp.MustCompile(`(?i)\bswitch\s.*strategy`),
	regexp.MustCompile(`(?i)HasPrefix\([^)]*strategy`),
	// A map from strategy constants to per-strategy values outside the
	// registry (e.g. which options block belongs to whom).
	regexp.MustCompile(`map\[(forwarding\.)?Strategy\][^{]*\{\s*(forwarding\.)?Strategy(Beamer|Maglev|Prism|Cheetah|AWFD)\b`),
}

// dispatchExceptions are matches outside strategy files that are no
// dispatch, by file and the matched line's text, with the reason.
var dispatchExceptions = map[string]string{
	// Result rows put in the registry's order: matching names, no behaviour.
	"research/lab/plot.go:if r.Strategy == s {":         "orders result rows by the registry's order",
	"research/lab/plot_compare.go:if r.Strategy == s {": "orders result rows by the registry's order",
	// A report's prose picks a figure by its row's name.
	"research/bench/dpbench/markdown.go:if l := &r.Live[i]; l.Strategy == strategy && l.Softirq == softirq && !l.TX {": "picks a report row by name",
	"research/bench/dpbench/markdown.go:if l := &r.Live[i]; l.Strategy == strategy && l.TX {":                          "picks a report row by name",
	// hashsim's own hash algorithms (stable, maglev, consistent,
	// rendezvous), not the product's strategies: the paper's Table 1
	// figures by algorithm row.
	`research/sim/hashsim/table1.go:case "maglev":`: "the paper's figures for the Maglev algorithm's row",
}

// strategyWords are the path words that make a file or folder a strategy's
// own: its name, or "strategy" (a layer's interface and registry).
var strategyWords = []string{"beamer", "maglev", "prism", "cheetah", "awfd", "strategy"}

// isStrategyPath tells whether path (slash-separated, from the module's
// root) is a strategy's own file or in a strategy's folder: a word of a
// folder or file name (split at / _ . -) starts with a strategy's name or
// "strategy", e.g. pkg/strategy/cheetah/cookie.go, pkg/dataplane/mux_awfd.go,
// research/sim/cheetahsim/run.go, pkg/forwarding/strategy_prism.go. Folders
// named after the project (cmd/beamer, cmd/internal/beamercli) are not the
// beamer strategy's: for it only the file's own name counts.
func isStrategyPath(path string) bool {
	dir, file := "", path
	if i := strings.LastIndex(path, "/"); i >= 0 {
		dir, file = path[:i], path[i+1:]
	}
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == '_' || r == '.' || r == '-' })
	}
	for _, w := range split(dir) {
		for _, s := range strategyWords {
			if s != "beamer" && strings.HasPrefix(w, s) {
				return true
			}
		}
	}
	for _, w := range split(file) {
		for _, s := range strategyWords {
			if strings.HasPrefix(w, s) {
				return true
			}
		}
	}
	return false
}

func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

// TestNoStrategyDispatchOutsideStrategies counts the strategy dispatch
// checks in non-test Go files outside strategy files and folders: there
// must be none but the named exceptions.
func TestNoStrategyDispatchOutsideStrategies(t *testing.T) {
	root := moduleRoot(t)
	used := map[string]bool{}
	var found []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" || d.Name() == "vendor" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || isStrategyPath(rel) {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(line, "//") {
				continue
			}
			for _, re := range dispatchPatterns {
				if !re.MatchString(line) {
					continue
				}
				key := rel + ":" + line
				if _, ok := dispatchExceptions[key]; ok {
					used[key] = true
				} else {
					found = append(found, rel+":"+strconv.Itoa(n)+": "+line)
				}
				break
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("strategy dispatch outside a strategy's file or folder (ask the layer's strategy interface instead): %s", f)
	}
	for key := range dispatchExceptions {
		if !used[key] {
			t.Errorf("exception no longer matches anything, remove it: %s", key)
		}
	}
	t.Logf("%d strategy dispatch checks outside strategy files, %d named exceptions", len(found), len(used))
}

// TestStrategyPaths pins which paths count as a strategy's own.
func TestStrategyPaths(t *testing.T) {
	for path, want := range map[string]bool{
		"pkg/strategy/cheetah/cookie.go":        true,
		"pkg/dataplane/mux_awfd.go":             true,
		"pkg/node/config/agent_cheetah.go":      true,
		"research/sim/cheetahsim/run.go":        true,
		"pkg/controlplane/controller/probe.go":  false,
		"cmd/beamer/main.go":                    false,
		"cmd/internal/beamercli/ctl.go":         false,
		"cmd/internal/beamercli/ctl_cheetah.go": true,
		"pkg/dataplane/mux_beamer.go":           true,
		"pkg/forwarding/strategy_prism.go":      true,
		"pkg/controlplane/declarative/parse.go": false,
	} {
		if got := isStrategyPath(path); got != want {
			t.Errorf("%s: strategy's own %v, want %v", path, got, want)
		}
	}
	for line, want := range map[string]bool{
		`if in.Strategy == "" {`:                                    false,
		`if v.Strategy != "" && !v.Strategy.Known() {`:              false,
		`if in.Strategy == forwarding.StrategyMaglev {`:             true,
		`stateful := s == forwarding.StrategyMaglev`:                true,
		`if r.p.Strategy == "prism" {`:                              true,
		`case forwarding.StrategyPrism:`:                            true,
		`switch in.Strategy {`:                                      true,
		`if spec := c.Strategy.Spec(); spec.IPv6 {`:                 false,
		`if v.Strategy == "beamer" || x {`:                          true,
		`for n, set := range map[Strategy]bool{StrategyPrism: a} {`: true,
	} {
		got := false
		for _, re := range dispatchPatterns {
			got = got || re.MatchString(line)
		}
		if got != want {
			t.Errorf("%q: dispatch %v, want %v", line, got, want)
		}
	}
}
