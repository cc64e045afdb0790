package beamercli

import (
	"os"
	"regexp"
	"runtime/debug"
	"testing"
)

// TestReleaseVersionIsChangelogs: the version a plain build says is the
// newest release CHANGELOG.md records (scripts/version.sh reads the same).
func TestReleaseVersionIsChangelogs(t *testing.T) {
	b, err := os.ReadFile("../../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^## \[([0-9]+\.[0-9]+\.[0-9]+)\] - \d{4}-\d{2}-\d{2}$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("CHANGELOG.md: no release heading ## [X.Y.Z] - YYYY-MM-DD")
	}
	if string(m[1]) != releaseVersion {
		t.Errorf("releaseVersion %s, CHANGELOG.md's newest release %s", releaseVersion, m[1])
	}
}

// TestVersionSources: a tagged module version wins; a pseudo-version or a
// checkout's (devel) gives the version the build was given.
func TestVersionSources(t *testing.T) {
	saved := version
	defer func() { version = saved }()
	version = "0.1.0+3.gabcdef123456"
	for mv, want := range map[string]string{
		"v0.2.0":                             "v0.2.0",
		"(devel)":                            "v0.1.0+3.gabcdef123456",
		"":                                   "v0.1.0+3.gabcdef123456",
		"v0.0.0-20261126000000-abcdef123456": "v0.1.0+3.gabcdef123456",
		"v0.1.1-0.20261126000000-abcdef123456+dirty": "v0.1.0+3.gabcdef123456",
	} {
		if got := buildVersion(&debug.BuildInfo{Main: debug.Module{Version: mv}}).Version; got != want {
			t.Errorf("module version %q: got %s want %s", mv, got, want)
		}
	}
}
