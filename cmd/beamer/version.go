package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionInfo is `beamer version -o json|yaml` (docs/operations.md). It
// comes from the build info the Go toolchain embeds: the module version
// ("(devel)" for a build from a checkout) and the VCS revision when built
// inside a git work tree.
type versionInfo struct {
	Module    string `json:"module"`
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	Time      string `json:"vcs_time,omitempty"`
	Modified  bool   `json:"modified"`
	GoVersion string `json:"go_version"`
}

func buildVersion(bi *debug.BuildInfo) versionInfo {
	v := versionInfo{Module: bi.Main.Path, Version: bi.Main.Version, GoVersion: bi.GoVersion}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// currentVersion is this binary's version (also the build-info metric's labels).
func currentVersion() versionInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return versionInfo{Version: "unknown"}
	}
	return buildVersion(bi)
}

func printVersion(w io.Writer, v versionInfo) {
	fmt.Fprintf(w, "beamer %s", v.Version)
	if v.Revision != "" {
		fmt.Fprintf(w, " (revision %s", v.Revision)
		if v.Modified {
			fmt.Fprint(w, ", modified")
		}
		if v.Time != "" {
			fmt.Fprintf(w, ", %s", v.Time)
		}
		fmt.Fprint(w, ")")
	}
	fmt.Fprintf(w, " %s, built with %s\n", v.Module, v.GoVersion)
}

func init() {
	cmd := &cobra.Command{Use: "version", Short: "Print the version, VCS revision and Go version of this binary", Args: cobra.NoArgs}
	format := addOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := checkOutput(*format); err != nil {
			return err
		}
		v := currentVersion()
		return emit(cmd.OutOrStdout(), *format, v, func(w io.Writer) { printVersion(w, v) })
	}
	rootCmd.AddCommand(cmd)
}
