package muxd

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/node/config"
)

// childEnv, when set, makes the test binary a mux daemon process (the
// kill-and-restart test runs it inside a namespace and SIGKILLs it): the
// value names a static mux configuration; the pin directory and state file
// follow in childPinEnv and childStateEnv.
const (
	childEnv      = "BEAMER_MUXD_TEST_CHILD"
	childPinEnv   = "BEAMER_MUXD_TEST_PIN"
	childStateEnv = "BEAMER_MUXD_TEST_STATE"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		os.Exit(childMux(path))
	}
	if spec := os.Getenv(childBGPEnv); spec != "" {
		os.Exit(childBGP(spec)) // bgp_frr_test.go
	}
	os.Exit(m.Run())
}

// childMux runs a static mux as `beamer mux --config` does: start, set the
// instances, Ready, then serve until SIGTERM.
func childMux(path string) int {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	cfg, err := config.LoadMux(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	d, err := Start(Options{Interface: cfg.Interface, XDPMode: dataplane.XDPDriver,
		PinDir: os.Getenv(childPinEnv), StateFile: os.Getenv(childStateEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, in := range cfg.Instances {
		if err := d.SetInstance(in.Instance, in.Table()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			d.Close()
			return 1
		}
	}
	if err := d.Ready(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		d.Close()
		return 1
	}
	fmt.Println("ready")
	<-stop
	if err := d.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
