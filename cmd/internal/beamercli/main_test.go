package beamercli

import (
	"os"
	"testing"
)

// childEnv makes the test binary run beamer's main instead of the tests, so
// a test can start real beamer processes (in other network namespaces)
// without building the binary first.
const childEnv = "BEAMER_TEST_RUN_MAIN"

// rootCmd is the command tree the in-process tests run (run, findCmd),
// built once as main builds it.
var rootCmd = newRootCommand()

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		Main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
