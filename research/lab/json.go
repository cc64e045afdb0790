package lab

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
)

// WriteJSON writes results as results.json in dir: one array, every run
// with its timeline.
func WriteJSON(dir string, results []*Result) error {
	b, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "results.json"), append(b, '\n'), 0o644)
}

// PrintJSON prints one JSON object per run, one a line, without the
// timeline (it is in results.json).
func PrintJSON(w io.Writer, results []*Result) error {
	enc := json.NewEncoder(w)
	for _, r := range results {
		c := *r
		c.Timeline = nil
		if err := enc.Encode(&c); err != nil {
			return err
		}
	}
	return nil
}
