package beamercli

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi"
	"github.com/beamer-lb/beamer/pkg/node/nodeauth"
	"github.com/spf13/cobra"
)

// ctl talks to the elected controller's management API (pkg/controlplane/mgmtapi),
// never to the store: it needs the API's address and, off loopback, its
// own certificate (role read or admin: scripts/store-certs.sh NAME=ROLE).

// defaultAPIAddr is where `beamer controller` serves the API by default.
const defaultAPIAddr = "127.0.0.1:9400"

// apiClientFlags are a ctl command's flags of the API.
type apiClientFlags struct {
	addrs    *[]string
	files    nodeauth.Files
	insecure *bool
}

func addAPIClientFlags(cmd *cobra.Command) *apiClientFlags {
	f := &apiClientFlags{}
	f.addrs = cmd.Flags().StringSlice("api", []string{defaultAPIAddr}, "the controllers' management API, HOST:PORT[,HOST:PORT…] (tried in order; a standby answers reads itself and forwards changes to the elected controller)")
	cmd.Flags().StringVar(&f.files.Cert, "cert", "", "this operator's certificate (PEM, role read or admin: scripts/store-certs.sh NAME=ROLE)")
	cmd.Flags().StringVar(&f.files.Key, "key", "", "the key of --cert")
	cmd.Flags().StringVar(&f.files.CA, "ca", "", "the CA that signed the controllers' API certificates")
	f.insecure = cmd.Flags().Bool("insecure", false, "call an API off loopback without TLS (anyone on that network could read or change what it carries)")
	return f
}

// client is a client of the API as the flags say. Plaintext is used only
// towards loopback unless --insecure.
func (f *apiClientFlags) client() (*mgmtapi.Client, error) {
	if !f.files.Set() && !*f.insecure {
		for _, a := range *f.addrs {
			if !loopbackAddr(a) {
				return nil, fmt.Errorf("--api %s without TLS: give --cert, --key and --ca (scripts/store-certs.sh NAME=read or NAME=admin), or --insecure", a)
			}
		}
	}
	var c *mgmtapi.Client
	var err error
	if f.files.Set() {
		tlsConf, terr := mgmtapi.ClientTLS(f.files)
		if terr != nil {
			return nil, fmt.Errorf("--cert/--key/--ca: %w", terr)
		}
		c, err = mgmtapi.Dial(*f.addrs, tlsConf)
	} else {
		c, err = mgmtapi.Dial(*f.addrs, nil)
	}
	return c, err
}

func loopbackAddr(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(host)
	return host == "localhost" || (err == nil && a.IsLoopback())
}

// withClient runs fn with a client and a context bounded by timeout.
func (f *apiClientFlags) withClient(timeout time.Duration, fn func(ctx context.Context, c *mgmtapi.Client) error) error {
	c, err := f.client()
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return fn(ctx, c)
}

// apiAddrsString is the addresses as given, for messages.
func (f *apiClientFlags) apiAddrsString() string { return strings.Join(*f.addrs, ",") }
