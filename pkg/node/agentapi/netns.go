package agentapi

import (
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
)

// inNamespace runs fn on a thread inside ns (when ns is valid). Sockets are
// bound to the namespace of the thread that creates them, and the agent
// must probe and list sockets in the server's namespace even when the
// process started elsewhere (tests run the daemon inside a namespace of
// their own from the host).
func inNamespace(ns netns.NsHandle, fn func() error) error {
	if !ns.IsOpen() {
		return fn()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return err
	}
	defer orig.Close()
	if orig.Equal(ns) {
		// Already there (an agent serving its own namespace): no setns,
		// which needs CAP_SYS_ADMIN that the packaged unit does not grant.
		return fn()
	}
	if err := netns.Set(ns); err != nil {
		return fmt.Errorf("enter the server's network namespace: %w", err)
	}
	ferr := fn()
	if err := netns.Set(orig); err != nil {
		// A thread stuck in another namespace must not run other goroutines:
		// leaving it locked makes the runtime end it with this goroutine.
		runtime.LockOSThread()
		return fmt.Errorf("return from the server's network namespace: %w", err)
	}
	return ferr
}
