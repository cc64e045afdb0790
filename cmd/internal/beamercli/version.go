package beamercli

import (
	"fmt"
	"io"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// releaseVersion is the newest release in CHANGELOG.md (a test keeps them
// equal): the version of a build nothing else names.
const releaseVersion = "0.1.0"

// version is the semantic version of this build without its "v":
// scripts/version.sh (git describe, else releaseVersion+git.REV) sets it
// with -ldflags "-X github.com/beamer-lb/beamer/cmd/internal/beamercli.version=..." in make build and make deb, so the
// binary and the package say the same. A plain go build says
// releaseVersion+dev.
var version = releaseVersion + "+dev"

// pseudoVersion matches the versions the Go toolchain makes up for an
// untagged commit (v0.0.0-20261126000000-abcdef123456): not a release.
var pseudoVersion = regexp.MustCompile(`[-.]\d{14}-[0-9a-f]{12}(\+dirty)?$`)

// versionInfo is `beamer version -o json|yaml` (docs/operations.md): the
// semantic version (the module's when it was installed by tag, `go install
// ...@v0.1.0`; else the one the build was given), and from the build info
// the Go toolchain embeds the VCS revision when built inside a git work tree.
type versionInfo struct {
	Module    string `json:"module"`
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	Time      string `json:"vcs_time,omitempty"`
	Modified  bool   `json:"modified"`
	GoVersion string `json:"go_version"`
}

func buildVersion(bi *debug.BuildInfo) versionInfo {
	v := versionInfo{Module: bi.Main.Path, Version: "v" + strings.TrimPrefix(version, "v"), GoVersion: bi.GoVersion}
	if mv := bi.Main.Version; strings.HasPrefix(mv, "v") && !pseudoVersion.MatchString(mv) {
		v.Version = mv
	}
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

// currentVersion is this binary's version (beamer version, the man pages).
func currentVersion() versionInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return versionInfo{Version: "v" + version}
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

// newVersionCommand is `beamer version`.
func newVersionCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "version", Short: "Print the version, VCS revision and Go version of this binary", Args: cobra.NoArgs}
	format := addOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := checkOutput(*format); err != nil {
			return err
		}
		v := currentVersion()
		return emit(cmd.OutOrStdout(), *format, v, func(w io.Writer) { printVersion(w, v) })
	}
	return cmd
}
