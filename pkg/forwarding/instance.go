package forwarding

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"time"
)

// MaxServicePort was the highest service port before service ports and the
// server-id range became settings (ports.go): the default server-id range
// still starts above it.
const MaxServicePort = 1024

// DefaultChainWindow is how long a bucket's previous owner keeps receiving
// daisy-chained packets after the bucket moved (Beamer §4.2: four minutes).
const DefaultChainWindow = 4 * time.Minute

// Instance is the configuration of one load-balancer instance: the paper's
// "config" node. It changes rarely; Buckets never changes after creation.
type Instance struct {
	Name     string       `json:"name" yaml:"name"`
	Strategy Strategy     `json:"strategy" yaml:"strategy"`
	VIPs     []netip.Addr `json:"vips" yaml:"vips"`
	// PortLow–PortHigh: TCP service ports on every VIP (0–0: none, then
	// Services must name some). Configurations written before Services
	// existed have only these.
	PortLow  uint16 `json:"port_low" yaml:"port_low"`
	PortHigh uint16 `json:"port_high" yaml:"port_high"`
	// Services: more ports, per protocol and optionally per VIP (ports.go).
	Services []Service `json:"services,omitempty" yaml:"services,omitempty"`
	// ServerIDRange is the MPTCP server-id range (ports.go); nil means
	// DefaultServerIDs, 1025–65535.
	ServerIDRange *ServerIDRange `json:"server_ids,omitempty" yaml:"server_ids,omitempty"`
	Buckets       uint32         `json:"buckets" yaml:"buckets"` // B
	ChainWindow   time.Duration  `json:"chain_window" yaml:"chain_window"`
	// MaxChainLen is K: how many previous owners a bucket's history keeps,
	// 1..MaxChain; 0 means DefaultMaxChainLen (configurations written
	// before the history existed).
	MaxChainLen int `json:"max_chain,omitempty" yaml:"max_chain,omitempty"`

	// The options of the strategies that have their own, each in its own
	// file (options_NAME.go); only the instance's strategy's may be set,
	// and its StrategySpec.Check validates them.
	Prism   *PrismOptions   `json:"prism,omitempty" yaml:"prism,omitempty"`
	Cheetah *CheetahOptions `json:"cheetah,omitempty" yaml:"cheetah,omitempty"`
	AWFD    *AWFDOptions    `json:"awfd,omitempty" yaml:"awfd,omitempty"`

	// Health says how the controller probes the instance's servers
	// (healthcheck.go); nil means the default agent probe.
	Health *HealthCheck `json:"health,omitempty" yaml:"health,omitempty"`

	// QUIC, when set, routes QUIC packets to UDP service ports by the
	// server id in their connection id (quic.go); nil: by bucket.
	QUIC *QUICOptions `json:"quic,omitempty" yaml:"quic,omitempty"`
	// ICMPEcho says what muxes do with echo requests to the VIPs
	// (icmp.go); empty means drop, as before it existed.
	ICMPEcho EchoPolicy `json:"icmp_echo,omitempty" yaml:"icmp_echo,omitempty"`
	// Encap and GUEPort: how muxes encapsulate towards the servers
	// (encap.go); empty means IP-in-IP with the option, as before.
	Encap   Encap  `json:"encap,omitempty" yaml:"encap,omitempty"`
	GUEPort uint16 `json:"gue_port,omitempty" yaml:"gue_port,omitempty"`
}

// DefaultMaxChainLen is K when the configuration does not say: a bucket
// survives four moves inside a window while its old owners still run.
const DefaultMaxChainLen = 4

// ChainLen is the effective K of the instance.
func (in *Instance) ChainLen() int {
	if in.MaxChainLen == 0 {
		return DefaultMaxChainLen
	}
	return in.MaxChainLen
}

var instanceName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// CheckInstanceName says why name cannot name an instance, if it cannot.
func CheckInstanceName(name string) error {
	if !instanceName.MatchString(name) {
		return errors.New("name must be 1–63 characters of a-z, 0-9 and '-', starting with a letter or digit")
	}
	return nil
}

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("invalid instance configuration")

// Validate checks the configuration and says exactly what is wrong.
func (in *Instance) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w %q: %s", ErrConfig, in.Name, fmt.Sprintf(format, a...))
	}
	if err := CheckInstanceName(in.Name); err != nil {
		return bad("%v", err)
	}
	if !in.Strategy.Known() {
		return bad("%v", in.checkStrategy())
	}
	if len(in.VIPs) == 0 {
		return bad("no VIP")
	}
	seen := map[netip.Addr]bool{}
	for _, v := range in.VIPs {
		if err := CheckVIP(v); err != nil {
			return bad("%v", err)
		}
		if seen[v] {
			return bad("VIP %v listed twice", v)
		}
		seen[v] = true
	}
	if err := in.checkFamily(); err != nil {
		return bad("%v", err)
	}
	if err := in.checkPorts(); err != nil {
		return bad("%v", err)
	}
	if err := in.QUIC.check(in); err != nil {
		return bad("%v", err)
	}
	if err := in.ICMPEcho.check(); err != nil {
		return bad("%v", err)
	}
	if err := in.checkEncap(); err != nil {
		return bad("%v", err)
	}
	if in.Buckets < MinBuckets || in.Buckets > MaxBuckets {
		return bad("bucket count %d must be in %d–%d (B must exceed the number of DIPs; about 100 per DIP is a good size)", in.Buckets, MinBuckets, MaxBuckets)
	}
	if err := in.checkStrategy(); err != nil {
		return bad("%v", err)
	}
	if in.ChainWindow < 0 {
		return bad("chain window %v is negative", in.ChainWindow)
	}
	if in.MaxChainLen < 0 || in.MaxChainLen > MaxChain {
		return bad("max_chain %d must be in 1–%d (0 = default %d)", in.MaxChainLen, MaxChain, DefaultMaxChainLen)
	}
	return nil
}
