package agentd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/node/nodestate"
	"golang.org/x/sys/unix"
)

// A stopped agent (SIGTERM, SIGINT, SIGUSR2, a crash) leaves its programs
// pinned and decapsulating, its Cheetah keys with them, and the node set
// up: the next agent on the interface adopts all of it, so a planned
// restart (`systemctl restart`, a package upgrade) costs no connection and
// no gap in decapsulation. Only Cleanup (`beamer agent cleanup`, the
// explicit uninstall) or Daemon.Close removes them.
//
// One agent per interface: Start holds a lock next to the state file for
// the agent's life, so a second agent, or a Cleanup, cannot pull the
// program or the VIPs from under a running one.

// lockNode takes the interface's agent lock, or says that an agent holds
// it. The kernel drops the lock with the process, whatever way it ends.
func lockNode(stateFile string) (*os.File, error) {
	path := stateFile + ".lock"
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("agent lock: %w", err)
		}
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	}
	if err != nil {
		return nil, fmt.Errorf("agent lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("another agent runs on this interface (it holds %s): stop it first", path)
		}
		return nil, fmt.Errorf("agent lock %s: %w", path, err)
	}
	return f, nil
}

// Cleanup is the explicit uninstall of a stopped agent: it detaches the
// programs a stopped or killed agent left pinned on iface (ingress, the
// Cheetah cookie writer), drops their maps and keys, and undoes what the
// agent changed on the node (VIPs on loopback, sysctls, MPTCP endpoints).
// The server's connections through the load balancer stop being
// decapsulated. It refuses while an agent runs on the interface. Nothing
// to clean is not an error.
func Cleanup(iface string, opts Options) error {
	if iface == "" {
		return errors.New("cleanup needs the agent's interface")
	}
	if err := opts.defaults(iface); err != nil {
		return err
	}
	lock, err := lockNode(opts.StateFile)
	if err != nil {
		return err
	}
	defer func() {
		os.Remove(lock.Name())
		lock.Close()
	}()
	var errs []error
	if opts.PinDir != "" {
		// The pins are the only references a stopped agent's links have
		// left: detach each explicitly (a removed pin alone detaches only
		// after an RCU grace period), then remove them.
		if err := dataplane.DetachPinned(opts.PinDir); err != nil {
			errs = append(errs, fmt.Errorf("removing the pins in %s: %w", opts.PinDir, err))
		}
	}
	node, err := nodestate.Open(opts.StateFile)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	if err := node.Undo(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
