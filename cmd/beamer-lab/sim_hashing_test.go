package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimHashingCommand runs the command at small sizes with --json and
// --plot and checks it prints one JSON object and writes the PNGs; a bad
// argument must fail with a clear error.
func TestSimHashingCommand(t *testing.T) {
	dir := t.TempDir()
	rootCmd := newRootCommand()
	var out bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetArgs([]string{"sim", "hashing", "--json", "--plot", dir, "--reps", "1", "--balance-reps", "1",
		"--frag-dips", "200", "--frag-buckets", "20000"})
	if err := rootCmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("output is not one JSON object: %v", err)
	}
	for _, k := range []string{"table1", "maglev_balance", "build_time_ms", "fragmentation", "defrag_run"} {
		if _, ok := r[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	for _, f := range []string{"maglev_balance.png", "maglev_resilience.png", "defrag_run.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("plot %s: %v", f, err)
		}
	}
	rootCmd.SetArgs([]string{"sim", "hashing", "--bmax", "0"})
	if err := rootCmd.Execute(); err == nil || !strings.Contains(err.Error(), "max moves") {
		t.Errorf("--bmax 0: error %v", err)
	}
}
