package lab

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// The scenarios of issue 10 (what operators do: rolling changes one
// request at a time, health failures, long-lived connections, DSR
// services, random churn) and the demo's, built into the binary so
// `beamer-lab lab run --scenario NAME` runs them anywhere. They are sized for
// CI; `--size paper --stretch F` makes a bigger run of the same schedule.
//
//go:embed scenarios/*.scenario
var builtinScenarios embed.FS

// ScenarioNames lists the built-in scenarios.
func ScenarioNames() []string {
	files, _ := fs.Glob(builtinScenarios, "scenarios/*.scenario")
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(path.Base(f), ".scenario"))
	}
	slices.Sort(names)
	return names
}

// ScenarioTitle is the first comment line of a built-in scenario.
func ScenarioTitle(name string) string {
	b, _ := builtinScenarios.ReadFile("scenarios/" + name + ".scenario")
	first, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(strings.TrimPrefix(first, "#"))
}

// LoadScenario reads a scenario file, or a built-in scenario by name when
// no such file exists.
func LoadScenario(name string) (*Scenario, error) {
	b, err := os.ReadFile(name)
	if err == nil {
		return ParseScenario(path.Base(name), bytes.NewReader(b))
	}
	if !os.IsNotExist(err) {
		return nil, err
	}
	b, berr := builtinScenarios.ReadFile("scenarios/" + strings.TrimSuffix(name, ".scenario") + ".scenario")
	if berr != nil {
		return nil, fmt.Errorf("%v; nor is it a built-in scenario (%s)", err, strings.Join(ScenarioNames(), ", "))
	}
	return ParseScenario(strings.TrimSuffix(name, ".scenario"), bytes.NewReader(b))
}
