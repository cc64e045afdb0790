package beamercli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/beamer-lb/beamer/pkg/controlplane/declarative"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
	"github.com/spf13/cobra"
)

// Declarative state (docs/operations.md, "Declarative configuration"):
// `ctl export` writes every instance as one YAML document, `ctl diff -f`
// prints what `ctl apply -f` would change, apply changes it. The logic is
// pkg/controlplane/declarative's; these commands read files and print.

// Exit codes of `ctl diff`, as diff(1)'s.
const (
	diffSame    = 0
	diffChanged = 1
	diffTrouble = 2
)

// readDocument parses FILE ("-": standard input) strictly.
func readDocument(path string) (*declarative.Document, error) {
	if path == "" {
		return nil, errors.New("-f FILE is required (- reads standard input)")
	}
	if path == "-" {
		return declarative.Parse("<stdin>", os.Stdin)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return declarative.Parse(path, f)
}

// runExport writes the live state to out.
func runExport(ctx context.Context, op declarative.Operator, out io.Writer) error {
	d, err := declarative.Export(ctx, op)
	if err != nil {
		return err
	}
	b, err := d.Marshal()
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	return err
}

// runDiff prints the changes apply would make and says whether there are.
func runDiff(ctx context.Context, op declarative.Operator, desired *declarative.Document, out io.Writer) (bool, error) {
	cur, err := declarative.Export(ctx, op)
	if err != nil {
		return false, err
	}
	changes := declarative.Diff(cur, desired)
	declarative.Print(out, changes)
	return len(changes) > 0, nil
}

// runApply applies desired and reports each change as it is made.
func runApply(ctx context.Context, op declarative.Operator, desired *declarative.Document, source string, opts declarative.Options, out io.Writer) error {
	if !opts.DryRun {
		opts.Progress = func(c declarative.Change) { fmt.Fprintln(out, c.String()) }
	}
	opts.CheetahKeys = func(_, file string) (cookie.Keys, error) {
		text, err := cheetahKeysText("cheetah keys_file", file)
		if err != nil {
			return cookie.Keys{}, err
		}
		return parseCheetahKeys(text)
	}
	changes, err := declarative.Apply(ctx, op, desired, opts)
	if err != nil {
		return err
	}
	switch {
	case len(changes) == 0:
		fmt.Fprintf(out, "no changes: the live state equals %s\n", source)
	case opts.DryRun:
		declarative.Print(out, changes)
		fmt.Fprintf(out, "dry run: nothing changed (apply would send %d requests)\n", declarative.Requests(changes))
	default:
		fmt.Fprintf(out, "applied %s: %d requests\n", source, declarative.Requests(changes))
	}
	return nil
}

// addCtlDeclarative adds export, diff and apply.
func addCtlDeclarative(ctl *cobra.Command) {
	addCtlExport(ctl)
	addCtlDiff(ctl)
	addCtlApply(ctl)
}

func addCtlExport(ctl *cobra.Command) {
	exp, ef := newCtl(ctl, "export [-o FILE]", "Write every instance (configuration, servers, weights, drain state) as one YAML document; cheetah keys are never written", cobra.NoArgs)
	exp.ValidArgsFunction = nil
	expFile := exp.Flags().StringP("output", "o", "-", "file to write (- for standard output)")
	exp.RunE = func(cmd *cobra.Command, _ []string) error {
		return ef.withOperator(func(ctx context.Context, op declarative.Operator) error {
			if *expFile == "-" {
				return runExport(ctx, op, cmd.OutOrStdout())
			}
			f, err := os.Create(*expFile)
			if err != nil {
				return err
			}
			if err := runExport(ctx, op, f); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		})
	}
}

func addCtlDiff(ctl *cobra.Command) {
	diff, dfl := newCtl(ctl, "diff -f FILE", "Print what `ctl apply -f FILE` would change; exit 0 and print nothing when the live state equals FILE, 1 when it differs, 2 on trouble", cobra.NoArgs)
	diff.ValidArgsFunction = nil
	diffFile := diff.Flags().StringP("filename", "f", "", "the document (- for standard input)")
	diff.RunE = func(cmd *cobra.Command, _ []string) error {
		var changed bool
		err := func() error {
			d, err := readDocument(*diffFile)
			if err != nil {
				return err
			}
			return dfl.withOperator(func(ctx context.Context, op declarative.Operator) error {
				changed, err = runDiff(ctx, op, d, cmd.OutOrStdout())
				return err
			})
		}()
		if err != nil {
			fmt.Fprintln(os.Stderr, "beamer:", err)
			os.Exit(diffTrouble)
		}
		if changed {
			os.Exit(diffChanged)
		}
		return nil
	}
}

func addCtlApply(ctl *cobra.Command) {
	apply, af := newCtl(ctl, "apply -f FILE [--dry-run] [--prune] [--recreate]", "Make the live state equal to FILE in as few rebalances as possible; removed servers drain through their chain window; idempotent", cobra.NoArgs)
	apply.ValidArgsFunction = nil
	applyFile := apply.Flags().StringP("filename", "f", "", "the document (- for standard input)")
	dry := apply.Flags().Bool("dry-run", false, "print the changes, make none")
	prune := apply.Flags().Bool("prune", false, "delete instances the file leaves out (their connections break); without it apply refuses such a file")
	recreate := apply.Flags().Bool("recreate", false, "delete and create an instance whose create-only settings (strategy, VIPs, ports, buckets, ...) differ (its connections break); without it apply refuses")
	apply.RunE = func(cmd *cobra.Command, _ []string) error {
		d, err := readDocument(*applyFile)
		if err != nil {
			return err
		}
		return af.withOperator(func(ctx context.Context, op declarative.Operator) error {
			return runApply(ctx, op, d, *applyFile, declarative.Options{DryRun: *dry, Prune: *prune, Recreate: *recreate}, cmd.OutOrStdout())
		})
	}
}
