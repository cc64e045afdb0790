// Package storeurl opens a store.Store named by a URL, the value of the
// --store flag of every beamer command:
//
//	embed:///var/lib/beamer                 etcd embedded in this process, data in that directory
//	embed:///var/lib/beamer?client=127.0.0.1:2379&peer=127.0.0.1:2380
//	embed:///var/lib/beamer?client=10.0.0.1:2379&server-cert=s.pem&server-key=s.key&client-ca=ca.pem&ca=ca.pem&cert=c.pem&key=c.key
//	embed:///var/lib/beamer?name=a&client=…&peer=10.0.0.1:2380&initial-cluster=a=10.0.0.1:2380,b=10.0.0.2:2380,c=10.0.0.3:2380&peer-cert=…&peer-key=…&peer-ca=…
//	                                        one member of a replicated embedded etcd (cluster.go)
//	etcd://10.0.0.1:2379,10.0.0.2:2379      an etcd cluster
//	etcd://user@10.0.0.1:2379?ca=ca.pem&cert=c.pem&key=k.pem
//	zk://10.0.0.1:2181,10.0.0.2:2181        a ZooKeeper ensemble
//	zk://user@10.0.0.1:2181?session-timeout=10s
//	zk://user@10.0.0.1:2281?ca=ca.pem&cert=c.pem&key=k.pem      ZooKeeper's secureClientPort
//
// Common query parameters: root (the key prefix everything lives under,
// default /beamer), timeout (connection timeout). Passwords never go in
// the URL (it shows in process lists): they come from the environment
// variable BEAMER_STORE_PASSWORD or from password-file=PATH.
//
// embed:// connects to the embedded etcd of another beamer process if one
// already serves that directory, so `beamer controller` and `beamer ctl`
// can both be pointed at the same default.
package storeurl

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/etcdstore"
	"github.com/beamer-lb/beamer/pkg/store/zkstore"
)

// Default is the store of a newcomer: etcd embedded in /var/lib/beamer.
const Default = "embed:///var/lib/beamer"

// DefaultRoot is the key prefix used when the URL gives none.
const DefaultRoot = "/beamer"

// PasswordEnv names the environment variable holding the store password.
const PasswordEnv = "BEAMER_STORE_PASSWORD"

// Target is a parsed store URL.
type Target struct {
	Scheme  string // embed, etcd, zk
	Dir     string // embed: data directory
	Hosts   []string
	User    string
	Root    string
	Timeout time.Duration
	query   url.Values
}

var known = map[string][]string{
	"embed": {"root", "timeout", "client", "peer", "advertise", "server-cert", "server-key", "client-ca", "ca", "cert", "key", "server-name",
		"name", "peer-advertise", "initial-cluster", "cluster-state", "cluster-token", "peer-cert", "peer-key", "peer-ca"},
	"etcd": {"root", "timeout", "ca", "cert", "key", "server-name", "tls", "password-file", "lease-ttl", "keepalive"},
	"zk":   {"root", "timeout", "session-timeout", "password-file", "ca", "cert", "key", "server-name", "tls"},
}

// Parse checks a store URL without connecting.
func Parse(raw string) (*Target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("store URL %q: %w", raw, err)
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("store URL %q: %s", raw, fmt.Sprintf(format, a...))
	}
	params, ok := known[u.Scheme]
	if !ok {
		return nil, bad("scheme must be embed://DIR, etcd://HOST:PORT[,…] or zk://HOST:PORT[,…]")
	}
	q := u.Query()
	for k := range q {
		if !contains(params, k) {
			return nil, bad("unknown parameter %q for %s:// (known: %s)", k, u.Scheme, strings.Join(params, ", "))
		}
	}
	t := &Target{Scheme: u.Scheme, Root: DefaultRoot, Timeout: 10 * time.Second, query: q}
	if r := q.Get("root"); r != "" {
		t.Root = path.Clean("/" + r)
		if t.Root == "/" {
			return nil, bad("root must not be /")
		}
	}
	if s := q.Get("timeout"); s != "" {
		if t.Timeout, err = time.ParseDuration(s); err != nil || t.Timeout <= 0 {
			return nil, bad("timeout %q is not a positive duration", s)
		}
	}
	if u.User != nil {
		t.User = u.User.Username()
		if _, set := u.User.Password(); set {
			return nil, bad("put the password in $%s or password-file=, not in the URL", PasswordEnv)
		}
	}
	switch u.Scheme {
	case "embed":
		if u.Host != "" || u.Path == "" {
			return nil, bad("embed URLs name a directory: embed:///var/lib/beamer (three slashes)")
		}
		t.Dir = u.Path
		if err := t.checkCluster(); err != nil {
			return nil, bad("%v", err)
		}
	default:
		if u.Path != "" && u.Path != "/" {
			return nil, bad("unexpected path %q (use root= for a key prefix)", u.Path)
		}
		for _, h := range strings.Split(u.Host, ",") {
			if !strings.Contains(h, ":") {
				return nil, bad("host %q needs a port", h)
			}
			t.Hosts = append(t.Hosts, h)
		}
		if u.Host == "" {
			return nil, bad("no host")
		}
	}
	return t, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (t *Target) password() (string, error) {
	if f := t.query.Get("password-file"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("store password: %w", err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	return os.Getenv(PasswordEnv), nil
}

func (t *Target) duration(name string) (time.Duration, error) {
	s := t.query.Get(name)
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("store URL: %s %q is not a positive duration", name, s)
	}
	return d, nil
}

// Open parses raw and connects. The returned Target tells the key root.
func Open(ctx context.Context, raw string) (store.Store, *Target, error) {
	return OpenWith(ctx, raw, Options{})
}

// OpenWith is Open with options; a store reachable from the network without
// TLS is refused unless o.Insecure (secure.go).
func OpenWith(ctx context.Context, raw string, o Options) (store.Store, *Target, error) {
	t, err := Parse(raw)
	if err != nil {
		return nil, nil, err
	}
	if err := t.checkSecure(o); err != nil {
		return nil, nil, fmt.Errorf("store URL %q: %w", raw, err)
	}
	var pass string
	if t.User != "" {
		if pass, err = t.password(); err != nil {
			return nil, nil, err
		}
	}
	switch t.Scheme {
	case "embed":
		cfg := etcdstore.Config{DialTimeout: t.Timeout, Username: t.User, Password: pass, Logger: o.Logger}
		if cfg.TLS, err = t.tlsConfig(); err != nil {
			return nil, nil, err
		}
		ec := t.embedConfig()
		ec.WaitForServer, ec.Logger, ec.ConnectOnly = o.WaitForServer, o.Logger, o.ConnectOnly
		s, err := etcdstore.OpenEmbedded(ctx, ec, cfg)
		return s, t, err
	case "etcd":
		cfg := etcdstore.Config{Endpoints: t.Hosts, Username: t.User, Password: pass, DialTimeout: t.Timeout, Logger: o.Logger}
		if cfg.LeaseTTL, err = t.duration("lease-ttl"); err != nil {
			return nil, nil, err
		}
		if cfg.KeepAlive, err = t.duration("keepalive"); err != nil {
			return nil, nil, err
		}
		if cfg.TLS, err = t.tlsConfig(); err != nil {
			return nil, nil, err
		}
		s, err := etcdstore.Open(ctx, cfg)
		return s, t, err
	case "zk":
		cfg := zkstore.Config{Servers: t.Hosts, Username: t.User, Password: pass, DialTimeout: t.Timeout, Logger: o.Logger}
		if cfg.SessionTimeout, err = t.duration("session-timeout"); err != nil {
			return nil, nil, err
		}
		if cfg.TLS, err = t.tlsConfig(); err != nil {
			return nil, nil, err
		}
		s, err := zkstore.Open(ctx, cfg)
		return s, t, err
	}
	return nil, nil, errors.New("unreachable")
}

// tlsConfig builds the client TLS configuration from ca, cert, key,
// server-name and tls=true; nil means plain connections.
func (t *Target) tlsConfig() (*tls.Config, error) {
	q := t.query
	if q.Get("ca") == "" && q.Get("cert") == "" && q.Get("tls") != "true" {
		return nil, nil
	}
	c := &tls.Config{ServerName: q.Get("server-name"), MinVersion: tls.VersionTLS12}
	if ca := q.Get("ca"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("store TLS CA: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("store TLS CA %s: no PEM certificate in it", ca)
		}
	}
	if cert, key := q.Get("cert"), q.Get("key"); cert != "" || key != "" {
		if cert == "" || key == "" {
			return nil, errors.New("store TLS: cert= and key= go together")
		}
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("store TLS client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}
