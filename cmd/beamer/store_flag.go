package main

import (
	"context"
	"fmt"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storeurl"
	"github.com/spf13/cobra"
)

// addStoreFlag gives a command the --store flag every control-plane
// command shares (URL scheme: pkg/store/storeurl, docs/control-plane.md).
func addStoreFlag(cmd *cobra.Command) *string {
	return cmd.Flags().String("store", storeurl.Default,
		"control store: embed:///DIR (etcd embedded in a beamer process), etcd://HOST:PORT,…, zk://HOST:PORT,… (see docs/control-plane.md)")
}

// openStore opens the store named by url, failing within 30 s.
func openStore(ctx context.Context, url string) (store.Store, *storeurl.Target, error) {
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, t, err := storeurl.Open(octx, url)
	if err != nil {
		return nil, nil, fmt.Errorf("open store: %w", err)
	}
	return s, t, nil
}
