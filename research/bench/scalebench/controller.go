package scalebench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/store/storeurl"
)

// ControllerEnv names the environment variable that makes a test binary
// run ControllerMain instead of its tests (see TestMain): tests have no
// `beamer` binary to start, and the controller must be a process of its
// own so that its CPU and memory can be read apart from the muxes'.
const ControllerEnv = "BEAMER_SCALEBENCH_CONTROLLER"

// SelfController returns a Controller command that re-executes the
// current binary with ControllerEnv set.
func SelfController(storeURL string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), ControllerEnv+"="+storeURL)
	cmd.Stderr = os.Stderr
	return cmd
}

// ControllerMain runs a controller as `beamer controller --no-health-checks
// --no-holds --defrag-period 0` does, until SIGTERM or SIGINT.
func ControllerMain(storeURL string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	st, t, err := storeurl.Open(ctx, storeURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		return 1
	}
	defer st.Close()
	controller.Run(ctx, st, t.Root, controller.RunOptions{Identity: fmt.Sprintf("scalebench/%d", os.Getpid())})
	return 0
}

// BeamerController returns a Controller command running `beamer
// controller` from the binary at path (normally os.Executable()).
func BeamerController(path string) func(string) *exec.Cmd {
	return func(storeURL string) *exec.Cmd {
		// No management API: the bench drives the store itself, and a
		// second bench on the host must not collide on its port.
		cmd := exec.Command(path, "controller", "--store", storeURL, "--api", "", "--no-health-checks", "--no-holds",
			"--defrag-period", "0", "--identity", "scalebench")
		cmd.Stderr = os.Stderr
		return cmd
	}
}
