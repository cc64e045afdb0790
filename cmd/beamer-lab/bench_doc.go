package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"text/template"
	"time"

	"github.com/beamer-lb/beamer/research/bench/dpbench"
	"github.com/spf13/cobra"
)

// `beamer-lab bench doc` writes docs/performance.md from one run: the machine,
// the data-plane benchmark (both methods), the live benchmark and the
// control-plane benchmark (`beamer-lab bench control-plane`, run as a child of
// this binary), rendered through a template whose prose takes every figure
// from the run — so the document cannot drift from what the code measures.
// scripts/perf-doc.sh builds the binary and runs it.

// perfDoc is the template's data.
type perfDoc struct {
	Machine             dpbench.Machine
	Report              *dpbench.Report
	ControlPlane        string // the control-plane benchmark's markdown
	ControlPlaneCommand string
	ControlPlaneErr     string
	Command             string
	Revision            string
	Finished            time.Time
	Minutes             float64
	LoadEnd             string
}

// benchDocCmd is `beamer-lab bench doc`.
func benchDocCmd() *cobra.Command {
	var (
		out, tmpl, cpArgs string
		quick, noCP       bool
	)
	cmd := &cobra.Command{
		Use:   "doc",
		Short: "Run every benchmark once and write docs/performance.md from the figures",
		Long: `Describes the machine, runs the data-plane benchmark (batched and per-packet
methods), the live-traffic benchmark and the control-plane benchmark (this binary's
"bench control-plane", with --control-plane-args), and renders --template with the
results into --out. Every figure in the output comes from this one run. Needs root.
scripts/perf-doc.sh is the usual way to call it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Geteuid() != 0 {
				return errors.New("the benchmarks load BPF programs and create network namespaces: run as root")
			}
			// Parse first: a broken template fails before minutes of runs.
			if _, err := renderPerfDoc(tmpl, nil); err != nil {
				return err
			}
			d := perfDoc{Machine: dpbench.DescribeMachine(), Command: "scripts/perf-doc.sh"}
			d.Revision = vcsRevision()
			o, lo := dpbench.Full, dpbench.LiveFull
			if quick {
				o, lo = dpbench.Quick, dpbench.LiveQuick
				lo.Softirq = true
			}
			var err error
			fmt.Fprintln(os.Stderr, "data plane:")
			if d.Report, err = dpbench.Run(o, os.Stderr); err != nil {
				return err
			}
			fmt.Fprintln(os.Stderr, "live traffic:")
			if d.Report.Live, err = dpbench.RunLive(lo, os.Stderr); err != nil {
				return err
			}
			if !noCP {
				d.ControlPlane, d.ControlPlaneCommand, err = runControlPlane(cpArgs)
				if err != nil {
					d.ControlPlaneErr = err.Error()
					fmt.Fprintln(os.Stderr, "control plane:", err)
				}
			}
			d.Finished, d.LoadEnd = time.Now().UTC(), dpbench.LoadNow()
			d.Minutes = d.Finished.Sub(d.Machine.Started).Minutes()
			b, err := renderPerfDoc(tmpl, &d)
			if err != nil {
				return err
			}
			if out == "-" {
				_, err = os.Stdout.Write(b)
				return err
			}
			return os.WriteFile(out, b, 0o644)
		},
	}
	cmd.Flags().StringVar(&out, "out", "docs/performance.md", `the document to write ("-": standard output)`)
	cmd.Flags().StringVar(&tmpl, "template", "scripts/perf-doc.md.tmpl", "the document's template (Go text/template over the run's results)")
	cmd.Flags().BoolVar(&quick, "quick", false, "short runs (a check of the pipeline, not figures to publish)")
	cmd.Flags().BoolVar(&noCP, "no-control-plane", false, "skip the control-plane benchmark")
	cmd.Flags().StringVar(&cpArgs, "control-plane-args", "", "arguments for `beamer-lab bench control-plane` (default: its own)")
	return cmd
}

// runControlPlane runs `beamer-lab bench control-plane ARGS` (this binary) and
// returns its markdown.
func runControlPlane(args string) (string, string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", "", err
	}
	argv := append([]string{"bench", "control-plane"}, strings.Fields(args)...)
	shown := "beamer-lab " + strings.Join(argv, " ")
	if beamerFlag != "" { // the child finds the same binary
		argv = append(argv, "--beamer", beamerFlag)
	}
	fmt.Fprintln(os.Stderr, "control plane:", shown)
	c := exec.Command(self, argv...)
	c.Stderr = os.Stderr
	var b bytes.Buffer
	c.Stdout = &b
	if err := c.Run(); err != nil {
		return "", shown, fmt.Errorf("%s: %w", shown, err)
	}
	return b.String(), shown, nil
}

// renderPerfDoc renders the template with d (nil: only parses it). A field
// the template names but the data lacks is an error, not "<no value>".
func renderPerfDoc(tmpl string, d *perfDoc) ([]byte, error) {
	t, err := template.New(filepath.Base(tmpl)).Option("missingkey=error").Funcs(template.FuncMap{
		"sub": func(a, b float64) float64 { return a - b },
		"div": func(a, b float64) float64 { return a / b },
		"mul": func(a, b float64) float64 { return a * b },
		"num": func(n any) string { return dpbench.Thousands(fmt.Sprint(n)) },
	}).ParseFiles(tmpl)
	if err != nil || d == nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return nil, err
	}
	if bytes.Contains(b.Bytes(), []byte("<no value>")) {
		return nil, fmt.Errorf("%s: a value the template names is missing", tmpl)
	}
	return b.Bytes(), nil
}

// vcsRevision is the commit this binary was built from, as the Go
// toolchain records it inside a git work tree ("" without one).
func vcsRevision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" && modified {
		rev += " (with uncommitted changes)"
	}
	return rev
}
