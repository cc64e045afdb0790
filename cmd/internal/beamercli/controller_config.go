package beamercli

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// The controller's configuration file (--config) names its flags: one key
// per flag, the flag's name as key (`health-interval: 2s`), so the file
// and `beamer controller --help` are one reference and cannot drift. A
// flag on the command line or its BEAMER_ variable wins over the file.
// examples/controller.yaml is checked by TestControllerConfigExample.

// applyFlagFile sets cmd's flags from the YAML file at path.
func applyFlagFile(cmd *cobra.Command, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		f := cmd.Flags().Lookup(k)
		if f == nil || k == "config" || k == "help" {
			return fmt.Errorf("%s: %q is not a setting of beamer %s (the keys are its flags: beamer %s --help)", path, k, cmd.Name(), cmd.Name())
		}
		if f.Changed || envSet(k) {
			continue // the command line, then the environment, win
		}
		if err := setFlag(f, m[k]); err != nil {
			return fmt.Errorf("%s: %s: %w", path, k, err)
		}
	}
	return nil
}

// envSet tells whether the flag's BEAMER_ variable gave it a value.
func envSet(flag string) bool {
	if !slices.Contains(envFlags, flag) {
		return false
	}
	v, ok := os.LookupEnv(envName(flag))
	return ok && v != ""
}

// setFlag gives a flag a YAML value: a scalar as its text, a list to a
// list flag.
func setFlag(f *pflag.Flag, v any) error {
	if list, ok := v.([]any); ok {
		sv, isSlice := f.Value.(pflag.SliceValue)
		if !isSlice {
			return fmt.Errorf("takes one value, not a list")
		}
		s := make([]string, len(list))
		for i, x := range list {
			s[i] = fmt.Sprint(x)
		}
		return sv.Replace(s)
	}
	if _, isMap := v.(map[string]any); isMap || v == nil {
		return fmt.Errorf("takes a value (%s)", strings.TrimSpace(f.Usage))
	}
	return f.Value.Set(fmt.Sprint(v))
}
