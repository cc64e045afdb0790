package beamercli

import (
	"github.com/beamer-lb/beamer/cmd/internal/rootflags"
	"github.com/spf13/cobra"
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
func envName(flag string) string { return rootflags.EnvName(flag) }

// documentEnv adds "(env BEAMER_X)" to the help of every flag in envFlags,
// on every command. newRootCommand runs it once the tree is built.
func documentEnv(c *cobra.Command) { rootflags.DocumentEnv(c, envFlags) }

// applyEnv sets the flags of cmd not given on the command line from their
// variables. The flag is not marked as changed: commands that ask whether
// a flag was given mean the command line.
func applyEnv(cmd *cobra.Command) error { return rootflags.ApplyEnv(cmd, envFlags) }

// ApplyEnv is applyEnv for a command of this tree run under another root
// (beamer-lab mux), whose own root does not know these variables.
func ApplyEnv(cmd *cobra.Command) error { return applyEnv(cmd) }
