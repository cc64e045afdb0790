// Package declarative is Beamer's declarative state: one YAML document
// naming every instance with its configuration and servers (Export), the
// ordered changes that turn the live state into a document's (Diff), and
// applying them through the elected controller with the same rolling-change
// safety as the imperative `ctl` commands (Apply).
//
// It talks to the control plane only through Operator, so the same code
// runs over the store (cmd/beamer) or the management API.
package declarative

import (
	"context"
	"net/netip"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Operator is what export/diff/apply need of a control plane.
type Operator interface {
	Submit(ctx context.Context, r controller.Request) (result string, err error) // as controller.SubmitResult
	Show(ctx context.Context, name string) (*controller.View, error)             // as controller.Show
	Instances(ctx context.Context) ([]string, error)                             // every instance name, sorted
}

// APIVersion is the only document version this package reads and writes.
const APIVersion = "beamer/v1"

// Document is the whole declarative state.
type Document struct {
	APIVersion string     `yaml:"apiVersion"`
	Instances  []Instance `yaml:"instances"`
}

// Instance is one instance: its configuration (every field `ctl create`
// sets, named as in the stored configuration) and its servers. The
// configuration can only be set at creation; servers change in place.
type Instance struct {
	Name          string                    `yaml:"name"`
	Strategy      forwarding.Strategy       `yaml:"strategy"`
	VIPs          []netip.Addr              `yaml:"vips"`
	PortLow       uint16                    `yaml:"port_low,omitempty"`
	PortHigh      uint16                    `yaml:"port_high,omitempty"`
	Services      []forwarding.Service      `yaml:"services,omitempty"`
	ServerIDRange *forwarding.ServerIDRange `yaml:"server_ids,omitempty"`
	Buckets       uint32                    `yaml:"buckets"`
	ChainWindow   time.Duration             `yaml:"chain_window"`
	MaxChainLen   int                       `yaml:"max_chain,omitempty"`
	Prism         *forwarding.PrismOptions  `yaml:"prism,omitempty"`
	Cheetah       *Cheetah                  `yaml:"cheetah,omitempty"`
	AWFD          *forwarding.AWFDOptions   `yaml:"awfd,omitempty"`
	Health        *forwarding.HealthCheck   `yaml:"health,omitempty"`
	QUIC          *forwarding.QUICOptions   `yaml:"quic,omitempty"`
	ICMPEcho      forwarding.EchoPolicy     `yaml:"icmp_echo,omitempty"`
	Encap         forwarding.Encap          `yaml:"encap,omitempty"`
	GUEPort       uint16                    `yaml:"gue_port,omitempty"`
	Servers       []Server                  `yaml:"servers"`

	// removing: servers on their way out (remove-dip ran, their chain
	// window is not over). Export leaves them out of the document (the
	// desired state is without them); Diff needs them to refuse adding
	// one of their ids back too early.
	removing map[forwarding.ServerID]netip.Addr
}

// Cheetah is the cheetah strategy's part of a document. The cookie keys
// are secrets and never exported: an instance created by apply gets keys
// from KeysFile (KEY0[,KEY1[,CURRENT]], 32 hex digits each, as `ctl create
// --cheetah-keys-file`) or drawn at random; after that `ctl cheetah
// rotate-key` manages them and apply leaves them alone.
type Cheetah struct {
	Policy   forwarding.CheetahPolicy `yaml:"policy"`
	KeysFile string                   `yaml:"keys_file,omitempty"`
}

// Server is one server (DIP) of an instance.
type Server struct {
	ID      forwarding.ServerID `yaml:"id"`
	Address netip.Addr          `yaml:"address"`
	Weight  uint32              `yaml:"weight"`
	Drained bool                `yaml:"drained,omitempty"`
}

// config is the stored configuration the instance describes, without
// cheetah keys (Apply draws or reads them at creation).
func (in *Instance) config() *forwarding.Instance {
	c := &forwarding.Instance{
		Name: in.Name, Strategy: in.Strategy, VIPs: in.VIPs, PortLow: in.PortLow, PortHigh: in.PortHigh,
		Services: in.Services, ServerIDRange: in.ServerIDRange, Buckets: in.Buckets, ChainWindow: in.ChainWindow,
		MaxChainLen: in.MaxChainLen, Prism: in.Prism, AWFD: in.AWFD, Health: in.Health, QUIC: in.QUIC,
		ICMPEcho: in.ICMPEcho, Encap: in.Encap, GUEPort: in.GUEPort,
	}
	if in.Cheetah != nil {
		c.Cheetah = &forwarding.CheetahOptions{Policy: in.Cheetah.Policy}
	}
	return c
}

// fromConfig is the document's form of a stored configuration; the
// cheetah keys and rotation times are left out.
func fromConfig(c *forwarding.Instance) Instance {
	in := Instance{
		Name: c.Name, Strategy: c.Strategy, VIPs: c.VIPs, PortLow: c.PortLow, PortHigh: c.PortHigh,
		Services: c.Services, ServerIDRange: c.ServerIDRange, Buckets: c.Buckets, ChainWindow: c.ChainWindow,
		MaxChainLen: c.MaxChainLen, Prism: c.Prism, AWFD: c.AWFD, Health: c.Health, QUIC: c.QUIC,
		ICMPEcho: c.ICMPEcho, Encap: c.Encap, GUEPort: c.GUEPort, Servers: []Server{},
	}
	if c.Cheetah != nil {
		in.Cheetah = &Cheetah{Policy: c.Cheetah.Policy}
	}
	return in
}

// configFields are the forwarding.Instance fields config/fromConfig carry
// (a test fails when forwarding.Instance gains one not listed here, so a
// new option is never silently left out of exports).
var configFields = []string{"Name", "Strategy", "VIPs", "PortLow", "PortHigh", "Services", "ServerIDRange",
	"Buckets", "ChainWindow", "MaxChainLen", "Prism", "Cheetah", "AWFD", "Health", "QUIC", "ICMPEcho", "Encap", "GUEPort"}
