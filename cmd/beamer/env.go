package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// envFlags are the flags an environment variable can give: BEAMER_ and the
// flag's name in capitals, '-' as '_' (--store ← BEAMER_STORE). A flag on
// the command line wins over the variable. One list, one mechanism, so a
// systemd EnvironmentFile or a shell profile sets the store once for every
// command. Lists (--instance, --trusted, ctl --api) take comma-separated
// values. BEAMER_API is where a daemon serves its API and where ctl calls
// the controller's: the same address on the controller's host.
var envFlags = []string{"store", "insecure", "instance", "iface", "config", "metrics", "api", "api-cert", "api-key", "api-ca", "node-cert", "node-key", "node-ca", "cert", "key", "ca", "log-level", "log-format"}

// envName is the variable of a flag.
func envName(flag string) string {
	return "BEAMER_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// documentEnv adds "(env BEAMER_X)" to the help of every flag in envFlags,
// on every command. It runs once, from main and tests, after every init.
func documentEnv(c *cobra.Command) {
	visit := func(f *pflag.Flag) {
		for _, n := range envFlags {
			if f.Name == n && !strings.Contains(f.Usage, envName(n)) {
				f.Usage += fmt.Sprintf(" (env %s)", envName(n))
			}
		}
	}
	c.Flags().VisitAll(visit)
	c.PersistentFlags().VisitAll(visit)
	for _, sub := range c.Commands() {
		documentEnv(sub)
	}
}

// applyEnv sets the flags of cmd not given on the command line from their
// variables. The flag is not marked as changed: commands that ask whether
// a flag was given mean the command line.
func applyEnv(cmd *cobra.Command) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		for _, n := range envFlags {
			if f.Name != n {
				continue
			}
			v, ok := os.LookupEnv(envName(n))
			if !ok || v == "" {
				return
			}
			if sv, isSlice := f.Value.(pflag.SliceValue); isSlice {
				err = sv.Replace(strings.Split(v, ","))
			} else {
				err = f.Value.Set(v)
			}
			if err != nil {
				err = fmt.Errorf("%s=%q: %w", envName(n), v, err)
			}
		}
	})
	return err
}

func init() {
	rootCmd.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := applyEnv(cmd); err != nil {
			return err
		}
		return setupLogging()
	}
}
