package beamercli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storeurl"
	"github.com/spf13/cobra"
)

// addStoreFlag gives a command the --store flag every control-plane
// command shares (URL scheme: pkg/store/storeurl, docs/control-plane.md).
// It also adds --insecure: one command runs per process, so every command
// may bind it to the same variable.
func addStoreFlag(cmd *cobra.Command) *string {
	cmd.Flags().BoolVar(&insecureStore, "insecure", false,
		"allow a store on a non-loopback address without TLS (etcd://, zk://) or an embedded store serving one without mutual TLS: anyone on that network could rewrite it")
	return cmd.Flags().String("store", storeurl.Default,
		"control store: embed:///DIR (etcd embedded in a beamer process; ?client=HOST:PORT is where it listens for muxes on other hosts, default 127.0.0.1:2379, &advertise=HOST:PORT the address written for clients; mutual TLS: server-cert=, server-key=, client-ca=; one member of a replicated cluster: name=, initial-cluster=, peer-cert=, peer-key=, peer-ca=), etcd://HOST:PORT,…, zk://HOST:PORT,… (see docs/control-plane.md)")
}

// insecureStore is --insecure.
var insecureStore bool

// embedWait is how long a command given embed:// waits for another process
// (the controller) to serve the directory before serving it itself; the
// controller, the store's owner, sets it to 0.
var embedWait = 3 * time.Second

// checkStore refuses a bad or insecure store URL without connecting.
func checkStore(url string) error {
	if err := storeurl.Check(url, storeurl.Options{Insecure: insecureStore}); err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	return nil
}

// openStore opens the store named by url, failing within 30 s.
func openStore(ctx context.Context, url string) (store.Store, *storeurl.Target, error) {
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, t, err := storeurl.OpenWith(octx, url, storeurl.Options{Insecure: insecureStore, WaitForServer: embedWait,
		Logger: slog.Default().With("component", "store")})
	if err != nil {
		return nil, nil, fmt.Errorf("open store: %w", err)
	}
	return s, t, nil
}
