package beamercli

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/node/nodeauth"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah"
	"github.com/beamer-lb/beamer/pkg/strategy/prism/migration"
	"github.com/spf13/cobra"
)

// The node APIs' mutual TLS (pkg/node/nodeauth, docs/operations.md "Trust
// boundaries"): the agent and the mux serve with --api-cert, --api-key,
// --api-ca; the controller calls them with --node-cert, --node-key,
// --node-ca. One CA for all, scripts/store-certs.sh NAME=ROLE@ADDR.

// addAPITLSFlags gives a node (agent, mux) the flags of its API's TLS.
func addAPITLSFlags(cmd *cobra.Command) *nodeauth.Files {
	var f nodeauth.Files
	cmd.Flags().StringVar(&f.Cert, "api-cert", "", "the node API's certificate (PEM, role agent or mux, naming the address the controller dials: scripts/store-certs.sh NAME=ROLE@ADDR)")
	cmd.Flags().StringVar(&f.Key, "api-key", "", "the key of --api-cert")
	cmd.Flags().StringVar(&f.CA, "api-ca", "", "the CA whose controller certificates may call the node API")
	return &f
}

// serverTLS builds a node's API TLS, nil when no file is named (a
// plaintext API, refused off loopback unless --insecure).
func serverTLS(f *nodeauth.Files, role nodeauth.Role) (*tls.Config, error) {
	if !f.Set() {
		return nil, nil
	}
	c, err := nodeauth.ServerConfig(*f, role)
	if err != nil {
		return nil, fmt.Errorf("--api-cert/--api-key/--api-ca: %w", err)
	}
	return c, nil
}

// addNodeClientFlags gives the controller the flags of its calls to the
// agents and muxes.
func addNodeClientFlags(cmd *cobra.Command) *nodeauth.Files {
	var f nodeauth.Files
	cmd.Flags().StringVar(&f.Cert, "node-cert", "", "the controller's certificate towards the agents' and muxes' APIs (PEM, role controller: scripts/store-certs.sh NAME=controller); without it the controller calls them in plaintext, which they refuse off loopback unless run with --insecure")
	cmd.Flags().StringVar(&f.Key, "node-key", "", "the key of --node-cert")
	cmd.Flags().StringVar(&f.CA, "node-ca", "", "the CA that signed the agents' and muxes' API certificates")
	return &f
}

// nodeClients are the controller's HTTP clients of the node APIs.
type nodeClients struct {
	tls *tls.Config
}

func newNodeClients(f *nodeauth.Files) (*nodeClients, error) {
	if !f.Set() {
		return &nodeClients{}, nil
	}
	c, err := nodeauth.ClientConfig(*f)
	if err != nil {
		return nil, fmt.Errorf("--node-cert/--node-key/--node-ca: %w", err)
	}
	return &nodeClients{tls: c}, nil
}

// http is a client with the controller's identity. No keep-alive: the
// agents are many and probed every few seconds; an idle connection to
// each would cost both sides.
func (n *nodeClients) http(timeout time.Duration) *http.Client {
	tr := &http.Transport{DisableKeepAlives: true, TLSClientConfig: n.tls, TLSHandshakeTimeout: timeout,
		ResponseHeaderTimeout: timeout}
	return &http.Client{Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (n *nodeClients) agents(timeout time.Duration) *agentapi.Client {
	return &agentapi.Client{HTTP: n.http(timeout), Scheme: nodeauth.Scheme(n.tls)}
}

func (n *nodeClients) muxes(timeout time.Duration) *migration.KeepAliveClient {
	return &migration.KeepAliveClient{HTTP: n.http(timeout), Scheme: nodeauth.Scheme(n.tls)}
}

// useNodeClients makes every call of the controller to an agent or a mux
// (health probes through the agent, connection holds, Prism signatures and
// keep-alive bits, Cheetah keys, AWFD capacity) present the controller's
// certificate, when --node-cert is given.
func useNodeClients(o *controller.RunOptions, f *nodeauth.Files) error {
	n, err := newNodeClients(f)
	if err != nil {
		return err
	}
	if n.tls == nil {
		slog.Info("controller: calling agents and muxes in plaintext (no --node-cert): nodes off loopback refuse it unless run with --insecure (docs/operations.md, \"Trust boundaries\")")
		return nil
	}
	agents := n.agents(10 * time.Second) // callers bound each call with their own, shorter, deadline
	if o.Health != nil {
		o.Health.Agents = n.agents(o.Health.Timeout)
	}
	if o.Holds != nil {
		o.Holds.Client = agents
	}
	if co, ok := o.Strategies[forwarding.StrategyCheetah].(*cheetah.ControllerOptions); ok {
		co.Client = agents
	}
	o.Capacity = agents
	po := prismOptions(o)
	po.Signatures = agents
	if po.KeepAlive != nil {
		po.KeepAlive.Client = n.muxes(10 * time.Second)
	}
	return nil
}
