package etcdstore

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
)

// An embedded etcd is one member of a replicated cluster when EmbedConfig
// names it (Name) and lists the cluster's members (InitialCluster): each
// controller host runs one member, and etcd's own raft replicates the
// store between them (no consensus of ours). Members talk to each other on
// their peer port; off loopback that traffic must be mutual TLS (PeerTLS),
// which the store URL's check enforces (storeurl, secure.go).

// DefaultMemberName is the name of a member whose configuration names
// none: the single-member store of a newcomer.
const DefaultMemberName = "beamer"

// peerTLSInfo is etcd's description of the peer certificates: mutual TLS
// always, the same certificate serving and dialling (so it needs the
// extended key usages serverAuth and clientAuth), and etcd checks that a
// dialling member's certificate names the address it dials from.
func (s *ServerTLS) peerTLSInfo() (transport.TLSInfo, error) {
	if s.ClientCAFile == "" {
		return transport.TLSInfo{}, errors.New("etcdstore: peer TLS needs the CA members' certificates are signed by (peer-ca=): members authenticate each other")
	}
	info, err := s.tlsInfo()
	if err != nil {
		return transport.TLSInfo{}, fmt.Errorf("peer: %w", err)
	}
	if _, err := info.ClientConfig(); err != nil {
		return transport.TLSInfo{}, fmt.Errorf("etcdstore: peer TLS (%s, %s): %w", s.CertFile, s.KeyFile, err)
	}
	return info, nil
}

// configureMember sets ec's member name, peer URLs, initial cluster, state
// and peer TLS from cfg. Without any cluster setting it is exactly the
// single-member store: name "beamer", plaintext peer port on cfg.PeerAddr.
func configureMember(cfg EmbedConfig, ec *embed.Config) error {
	scheme := "http"
	if cfg.PeerTLS != nil {
		info, err := cfg.PeerTLS.peerTLSInfo()
		if err != nil {
			return err
		}
		ec.PeerTLSInfo, scheme = info, "https"
	}
	listen, err := listenURL(scheme, cfg.PeerAddr)
	if err != nil {
		return fmt.Errorf("etcdstore: peer address: %w", err)
	}
	adv := listen
	if cfg.PeerAdvertiseAddr != "" {
		if _, _, err := net.SplitHostPort(cfg.PeerAdvertiseAddr); err != nil {
			return fmt.Errorf("etcdstore: advertised peer address: %w", err)
		}
		if adv, err = url.Parse(scheme + "://" + cfg.PeerAdvertiseAddr); err != nil {
			return fmt.Errorf("etcdstore: advertised peer address: %w", err)
		}
	}
	ec.Name = DefaultMemberName
	if cfg.Name != "" {
		ec.Name = cfg.Name
	}
	ec.ListenPeerUrls = []url.URL{*listen}
	ec.AdvertisePeerUrls = []url.URL{*adv}
	if cfg.InitialCluster == "" {
		if cfg.Join {
			return errors.New("etcdstore: joining a cluster needs its members (initial-cluster=, as `beamer store members add` prints it)")
		}
		ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	} else {
		if host, _, _ := net.SplitHostPort(adv.Host); net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified() {
			return fmt.Errorf("etcdstore: member %s would tell the others to dial it at %s: give the address they reach it at (peer-advertise=HOST:PORT)", ec.Name, adv.Host)
		}
		if ec.InitialCluster, err = NormalizeInitialCluster(cfg.InitialCluster, scheme); err != nil {
			return err
		}
		if !slices.Contains(memberNames(ec.InitialCluster), ec.Name) {
			return fmt.Errorf("etcdstore: initial-cluster %s does not list this member, %s", ec.InitialCluster, ec.Name)
		}
	}
	if cfg.Join {
		ec.ClusterState = embed.ClusterStateFlagExisting
		// A member restarted with data ignores this (etcd reads its
		// membership from its data): the same command line serves both.
	}
	if cfg.ClusterToken != "" {
		ec.InitialClusterToken = cfg.ClusterToken
	}
	return nil
}

// NormalizeInitialCluster checks etcd's NAME=PEER-URL,… list and gives
// every URL the scheme (https with peer TLS, http without) where it was
// left out (NAME=HOST:PORT); a URL with the other scheme is an error, as
// members would not understand each other.
func NormalizeInitialCluster(list, scheme string) (string, error) {
	var out []string
	seen := map[string]bool{}
	for _, m := range strings.Split(list, ",") {
		name, addr, ok := strings.Cut(m, "=")
		if !ok || name == "" || addr == "" {
			return "", fmt.Errorf("etcdstore: initial-cluster entry %q: want NAME=HOST:PORT or NAME=%s://HOST:PORT", m, scheme)
		}
		if seen[name] {
			return "", fmt.Errorf("etcdstore: initial-cluster names %s twice", name)
		}
		seen[name] = true
		if !strings.Contains(addr, "://") {
			addr = scheme + "://" + addr
		}
		u, err := url.Parse(addr)
		if err != nil {
			return "", fmt.Errorf("etcdstore: initial-cluster member %s: %w", name, err)
		}
		if u.Scheme != scheme {
			why := "peer TLS is on (peer-cert=, peer-key=, peer-ca=): every member's peer URL is https://"
			if scheme == "http" {
				why = "peer TLS is off: give peer-cert=, peer-key= and peer-ca= for https:// peers"
			}
			return "", fmt.Errorf("etcdstore: initial-cluster member %s is %s, but %s", name, addr, why)
		}
		if _, _, err := net.SplitHostPort(u.Host); err != nil || (u.Path != "" && u.Path != "/") {
			return "", fmt.Errorf("etcdstore: initial-cluster member %s: %q is not %s://HOST:PORT", name, addr, scheme)
		}
		out = append(out, name+"="+scheme+"://"+u.Host)
	}
	return strings.Join(out, ","), nil
}

// InitialClusterHosts are the peer host:ports of an initial-cluster list
// (for the security check, which refuses plaintext off loopback).
func InitialClusterHosts(list string) []string {
	var hosts []string
	for _, m := range strings.Split(list, ",") {
		_, addr, _ := strings.Cut(m, "=")
		if _, rest, ok := strings.Cut(addr, "://"); ok {
			addr = rest
		}
		if addr != "" {
			hosts = append(hosts, strings.TrimSuffix(addr, "/"))
		}
	}
	return hosts
}

func memberNames(list string) []string {
	var names []string
	for _, m := range strings.Split(list, ",") {
		name, _, _ := strings.Cut(m, "=")
		names = append(names, name)
	}
	return names
}
