// Package rootflags holds what the roots of both commands, beamer and
// beamer-lab, give every subcommand: the log flags (--log-level,
// --log-format) that set slog's default logger, and flags read from
// BEAMER_ environment variables. One place, so both binaries log alike
// and read the same variables the same way.
package rootflags

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Log is the root's --log-level and --log-format (also BEAMER_LOG_LEVEL
// and BEAMER_LOG_FORMAT where the command reads variables).
type Log struct{ Level, Format string }

// Register adds the log flags to a root's persistent flags.
func (l *Log) Register(fs *pflag.FlagSet) {
	fs.StringVar(&l.Level, "log-level", "info", "least severe level logged: debug, info, warn or error")
	fs.StringVar(&l.Format, "log-format", "text", "log format on stderr: text (key=value) or json (one object per line)")
}

// Install makes the flags' logger, writing to stderr, slog's default: every
// daemon and every library that logs through the standard log package then
// writes the same format.
func (l *Log) Install() error {
	lg, err := NewLogger(os.Stderr, l.Level, l.Format)
	if err != nil {
		return err
	}
	slog.SetDefault(lg)
	return nil
}

// NewLogger builds the logger the flags ask for, writing to w.
func NewLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	o := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// EnvName is the variable of a flag: BEAMER_ and the flag's name in
// capitals, '-' as '_' (--store ← BEAMER_STORE).
func EnvName(flag string) string {
	return "BEAMER_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// DocumentEnv adds "(env BEAMER_X)" to the help of every flag named in
// names, on c and every command below it. Idempotent.
func DocumentEnv(c *cobra.Command, names []string) {
	visit := func(f *pflag.Flag) {
		for _, n := range names {
			if f.Name == n && !strings.Contains(f.Usage, EnvName(n)) {
				f.Usage += fmt.Sprintf(" (env %s)", EnvName(n))
			}
		}
	}
	c.Flags().VisitAll(visit)
	c.PersistentFlags().VisitAll(visit)
	for _, sub := range c.Commands() {
		DocumentEnv(sub, names)
	}
}

// ApplyEnv sets the flags of cmd named in names and not given on the
// command line from their variables; list flags take comma-separated
// values. The flag is not marked as changed: commands that ask whether a
// flag was given mean the command line.
func ApplyEnv(cmd *cobra.Command, names []string) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		for _, n := range names {
			if f.Name != n {
				continue
			}
			v, ok := os.LookupEnv(EnvName(n))
			if !ok || v == "" {
				return
			}
			if sv, isSlice := f.Value.(pflag.SliceValue); isSlice {
				err = sv.Replace(strings.Split(v, ","))
			} else {
				err = f.Value.Set(v)
			}
			if err != nil {
				err = fmt.Errorf("%s=%q: %w", EnvName(n), v, err)
			}
		}
	})
	return err
}
