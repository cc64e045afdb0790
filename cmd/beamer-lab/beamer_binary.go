package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// beamerFlag is the root's --beamer: the product binary whose mux, agent and
// controller the lab, the demo and the control-plane benchmark run. The lab
// command holds no daemon of its own, so the processes it starts are the
// ones an operator would run.
var beamerFlag string

// beamerBinary is --beamer when given, else `beamer` beside this binary
// (make build puts both in bin/), else `beamer` on PATH.
func beamerBinary() (string, error) {
	if beamerFlag != "" {
		if _, err := os.Stat(beamerFlag); err != nil {
			return "", fmt.Errorf("--beamer: %w", err)
		}
		return filepath.Abs(beamerFlag)
	}
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), "beamer")
		if st, err := os.Stat(beside); err == nil && !st.IsDir() {
			return beside, nil
		}
	}
	if p, err := exec.LookPath("beamer"); err == nil {
		return filepath.Abs(p)
	}
	return "", errors.New("no beamer binary beside beamer-lab or on PATH: build it (make build) or give --beamer PATH")
}
