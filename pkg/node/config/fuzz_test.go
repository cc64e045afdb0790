package config

import (
	"os"
	"path/filepath"
	"testing"
)

// Fuzz targets of the configuration loaders (run for a few seconds by
// `make test`, scripts/fuzz.sh). Seeds: testdata/fuzz/FuzzLoadMux and
// FuzzLoadAgent (committed), plus goodMux here. A file either loads into a
// configuration that validates — and, for a mux, into a valid table — or
// is refused with an error; it never panics.

// fuzzFile writes data where the loader reads it: one file per fuzz
// process (inputs run one after the other in each).
func fuzzFile(t *testing.T, dir string, data []byte) string {
	p := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func FuzzLoadMux(f *testing.F) {
	f.Add([]byte(goodMux))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := LoadMux(fuzzFile(t, dir, data))
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("loaded configuration does not validate: %v", err)
		}
		for _, in := range c.Instances {
			if in.Buckets > 1<<16 {
				continue // valid, but too large to build on every input
			}
			if err := in.Table().Validate(); err != nil {
				t.Fatalf("instance %q builds an invalid table: %v", in.Name, err)
			}
		}
	})
}

func FuzzLoadAgent(f *testing.F) {
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := LoadAgent(fuzzFile(t, dir, data))
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("loaded configuration does not validate: %v", err)
		}
	})
}
