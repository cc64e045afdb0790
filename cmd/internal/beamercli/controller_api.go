package beamercli

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi"
	"github.com/beamer-lb/beamer/pkg/node/nodeauth"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/spf13/cobra"
)

// The controller's management API (pkg/controlplane/mgmtapi): `beamer ctl` and
// automation call it; the store stays internal.

type controllerAPIFlags struct {
	addr, advertise *string
	files           nodeauth.Files
}

func addControllerAPIFlags(cmd *cobra.Command) *controllerAPIFlags {
	f := &controllerAPIFlags{}
	f.addr = cmd.Flags().String("api", defaultAPIAddr, "serve the management API (gRPC, beamer.mgmt.v1) that `beamer ctl` calls on this address; \"\" serves none. Every controller serves it; a standby answers reads from the store and forwards changes to the elected one")
	f.advertise = cmd.Flags().String("api-advertise", "", "the address other controllers forward API calls to (default: --api's, with the port it bound)")
	cmd.Flags().StringVar(&f.files.Cert, "api-cert", "", "the API's certificate (PEM, role controller, naming the address callers dial: scripts/store-certs.sh NAME=controller@ADDR); without it the API is plaintext, refused off loopback unless --insecure")
	cmd.Flags().StringVar(&f.files.Key, "api-key", "", "the key of --api-cert")
	cmd.Flags().StringVar(&f.files.CA, "api-ca", "", "the CA whose read and admin certificates may call the API")
	return f
}

// check refuses bad API options before the store is opened.
func (f *controllerAPIFlags) tls() (server, forward *tls.Config, err error) {
	if *f.addr == "" {
		return nil, nil, nil
	}
	if !f.files.Set() {
		return nil, nil, nodeauth.CheckPlaintext("management API --api", *f.addr, insecureStore)
	}
	if server, err = nodeauth.ServerConfig(f.files, nodeauth.RoleController); err != nil {
		return nil, nil, fmt.Errorf("--api-cert/--api-key/--api-ca: %w", err)
	}
	if forward, err = mgmtapi.ClientTLS(f.files); err != nil {
		return nil, nil, fmt.Errorf("--api-cert/--api-key/--api-ca: %w", err)
	}
	return server, forward, nil
}

// serveControllerAPI listens on --api and serves until ctx ends; it
// publishes the address standbys forward to. The returned function
// stops it and withdraws the address.
func serveControllerAPI(ctx context.Context, f *controllerAPIFlags, st store.Store, root, identity string, server, forward *tls.Config) (func(), error) {
	if *f.addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", *f.addr)
	if err != nil {
		return nil, fmt.Errorf("--api: %w", err)
	}
	adv := *f.advertise
	if adv == "" {
		adv = ln.Addr().String()
	}
	b := &mgmtapi.StoreBackend{Store: st, Root: root, Identity: identity, ListJSON: listJSON, LookupJSON: lookupJSON}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = b.Publish(pctx, adv)
	cancel()
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("publish the API address: %w", err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgmtapi.Serve(sctx, ln, b, mgmtapi.Options{TLS: server, ForwardTLS: forward}); err != nil {
			slog.Error("management API stopped", "err", err)
		}
	}()
	slog.Info("management API", "addr", ln.Addr().String(), "advertise", adv, "tls", server != nil)
	return func() {
		stop()
		<-done
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		b.Unpublish(uctx)
		cancel()
	}, nil
}
