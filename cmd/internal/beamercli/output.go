package beamercli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

// Read commands print a table for people and, with -o json|yaml, a
// document for programs. Both documents come from the same JSON encoding
// (field names are the `json` tags, documented in docs/operations.md), so
// YAML never drifts from JSON.

// addOutputFlag gives a read command -o/--output.
func addOutputFlag(cmd *cobra.Command) *string {
	return cmd.Flags().StringP("output", "o", "table", "output format: table, json or yaml (field names and units: docs/operations.md)")
}

// checkOutput refuses an unknown format before any work is done.
func checkOutput(format string) error {
	switch format {
	case "table", "json", "yaml":
		return nil
	}
	return fmt.Errorf("--output %q: want table, json or yaml", format)
}

// emit writes v as format; table calls the human printer.
func emit(w io.Writer, format string, v any, table func(io.Writer)) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		return writeYAML(w, v)
	case "table":
		table(w)
		return nil
	}
	return checkOutput(format)
}

// writeYAML converts v's JSON encoding to YAML, keeping the field order
// (JSON is YAML: parsing it into a node keeps the order; block style is
// set on every node so the output reads like hand-written YAML).
func writeYAML(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil {
		return err
	}
	var unflow func(*yaml.Node)
	unflow = func(n *yaml.Node) {
		n.Style &^= yaml.FlowStyle
		if n.Kind == yaml.ScalarNode && n.Style&(yaml.DoubleQuotedStyle) != 0 {
			n.Style &^= yaml.DoubleQuotedStyle // the encoder quotes where YAML needs it
		}
		for _, c := range n.Content {
			unflow(c)
		}
	}
	unflow(&n)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}
