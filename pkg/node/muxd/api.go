package muxd

import (
	"fmt"
	"net/http"

	"github.com/beamer-lb/beamer/pkg/httpserver"
	"github.com/beamer-lb/beamer/pkg/node/nodeauth"
)

// serveAPI starts the mux node API on Options.API: the routes strategies
// serve (daemonspi.Server; Prism's POST /v1/prism/keepalive, which hands
// out and clears the keep-alive bits), so only the controller may call it
// (nodeauth.Only). It is apart from --metrics, which stays plaintext and
// read-only.
func (d *Daemon) serveAPI() error {
	if d.opts.API == "" {
		return nil
	}
	mux := http.NewServeMux()
	for _, svc := range d.services { // the strategies' own routes (daemonspi.Server)
		for pattern, h := range svc.Routes {
			mux.HandleFunc(pattern, h)
		}
	}
	lim := httpserver.Defaults()
	lim.MaxBodyBytes = 1 << 10 // the request is its query
	d.api = httpserver.New("mux API", nodeauth.Only(mux, nodeauth.RoleController), lim, d.opts.APITLS)
	if _, err := d.api.Listen(d.opts.API); err != nil {
		return fmt.Errorf("mux API listener: %w", err)
	}
	return nil
}

// checkAPI refuses a plaintext node API off loopback unless APIInsecure;
// Start calls it before it changes anything.
func (o *Options) checkAPI() error {
	if o.API == "" || o.APITLS != nil {
		return nil
	}
	return nodeauth.CheckPlaintext("mux API", o.API, o.APIInsecure)
}

// APIServer is the node API's server, nil without Options.API (tests).
func (d *Daemon) APIServer() *httpserver.Server { return d.api }
