package declarative

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Kind is what a change does.
type Kind string

// The kinds of change, in the order Diff lists them within an instance.
const (
	// CreateInstance creates an instance missing from the live state.
	CreateInstance Kind = "create-instance"
	// RecreateInstance deletes and creates an instance whose
	// create-only configuration differs; Apply does it only when asked
	// (Options.Recreate): it breaks the instance's connections.
	RecreateInstance Kind = "recreate-instance"
	// DeleteInstance deletes an instance missing from the document;
	// Apply does it only when asked (Options.Prune).
	DeleteInstance Kind = "delete-instance"
	// AddServers adds servers in one add-dip request (one rebalance).
	AddServers Kind = "add-servers"
	// RemoveServers removes servers in one remove-dip request: their
	// buckets move with daisy chaining, the controller retires them once
	// their chain window is over.
	RemoveServers Kind = "remove-servers"
	// Undrain, SetWeight and Drain change one server each.
	Undrain   Kind = "undrain"
	SetWeight Kind = "set-weight"
	Drain     Kind = "drain"
	// Refused is a difference Apply cannot make (Reason says why).
	Refused Kind = "refused"
)

// Change is one step from the live state towards the document.
type Change struct {
	Kind     Kind
	Instance string
	// Servers: the servers added or removed, or the one server changed
	// (with its weight in the document).
	Servers []Server
	// OldWeight: SetWeight's weight before.
	OldWeight uint32
	// Fields: RecreateInstance's differing configuration fields.
	Fields []string
	// Reason: why a Refused change cannot be made.
	Reason string

	desired *Instance // CreateInstance, RecreateInstance
}

// String is the change as one or more lines of a human diff: "+" adds,
// "-" removes, "~" changes in place, "!" cannot be applied as it is.
func (c Change) String() string {
	switch c.Kind {
	case CreateInstance:
		return fmt.Sprintf("+ instance %s (%s)", c.Instance, summary(c.desired))
	case RecreateInstance:
		return fmt.Sprintf("! instance %s: %s can only be set at creation; apply --recreate deletes and creates it (its connections break)",
			c.Instance, strings.Join(c.Fields, "; "))
	case DeleteInstance:
		return fmt.Sprintf("- instance %s (not in the file; apply --prune deletes it, its connections break)", c.Instance)
	case AddServers, RemoveServers:
		sign, what := "+", ""
		if c.Kind == RemoveServers {
			sign, what = "-", ", drained through its chain window"
		}
		lines := make([]string, len(c.Servers))
		for i, s := range c.Servers {
			lines[i] = fmt.Sprintf("%s instance %s: server %d %v weight %d%s", sign, c.Instance, s.ID, s.Address, s.Weight, what)
		}
		return strings.Join(lines, "\n")
	case SetWeight:
		s := c.Servers[0]
		return fmt.Sprintf("~ instance %s: server %d weight %d -> %d", c.Instance, s.ID, c.OldWeight, s.Weight)
	case Drain, Undrain:
		return fmt.Sprintf("~ instance %s: server %d %s", c.Instance, c.Servers[0].ID, c.Kind)
	}
	return fmt.Sprintf("! instance %s: %s", c.Instance, c.Reason)
}

// Print writes the changes as a human diff, one line per server.
func Print(w io.Writer, changes []Change) {
	for _, c := range changes {
		fmt.Fprintln(w, c.String())
	}
}

func summary(in *Instance) string {
	c := in.config()
	vips := make([]string, len(c.VIPs))
	for i, a := range c.VIPs {
		vips[i] = a.String()
	}
	return fmt.Sprintf("%s, VIPs %s, ports %s, %d buckets", c.Strategy, strings.Join(vips, ","), c.PortSummary(), c.Buckets)
}

// Diff lists, in the order Apply makes them, the changes that turn current
// (an Export) into desired: instances by name; within an instance, create
// (with all its servers in one add request), then one add request with
// every new server, one remove request with every server gone, then
// undrains, weights and drains. It never mixes instances in one request.
func Diff(current, desired *Document) []Change {
	cur := map[string]*Instance{}
	for i := range current.Instances {
		cur[current.Instances[i].Name] = &current.Instances[i]
	}
	want := map[string]*Instance{}
	var names []string
	for i := range desired.Instances {
		want[desired.Instances[i].Name] = &desired.Instances[i]
		names = append(names, desired.Instances[i].Name)
	}
	for n := range cur {
		if want[n] == nil {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out []Change
	// Deletions first: a VIP or address an instance left out held may be
	// what a new instance of the file takes.
	for _, n := range names {
		if want[n] == nil {
			out = append(out, Change{Kind: DeleteInstance, Instance: n})
		}
	}
	for _, n := range names {
		c, d := cur[n], want[n]
		switch {
		case d == nil:
		case c == nil:
			out = append(out, Change{Kind: CreateInstance, Instance: n, desired: d})
			out = append(out, serverChanges(&Instance{Name: n}, d)...)
		default:
			if fields := configDiff(c, d); len(fields) > 0 {
				out = append(out, Change{Kind: RecreateInstance, Instance: n, Fields: fields, desired: d})
				out = append(out, serverChanges(&Instance{Name: n}, d)...)
				continue
			}
			out = append(out, serverChanges(c, d)...)
		}
	}
	return out
}

// serverChanges turns c's servers into d's.
func serverChanges(c, d *Instance) []Change {
	have := map[forwarding.ServerID]Server{}
	for _, s := range c.Servers {
		have[s.ID] = s
	}
	keep := map[forwarding.ServerID]bool{}
	var add, remove []Server
	var undrain, weights, drain, refused []Change
	for _, s := range d.Servers {
		keep[s.ID] = true
		old, ok := have[s.ID]
		if !ok {
			if a, gone := c.removing[s.ID]; gone {
				refused = append(refused, Change{Kind: Refused, Instance: d.Name, Servers: []Server{s},
					Reason: fmt.Sprintf("server %d (%v) is still being removed (its connections are daisy-chained to it through the chain window); apply again once it is gone, or give %v another id", s.ID, a, s.Address)})
				continue
			}
			add = append(add, s)
			if s.Drained {
				drain = append(drain, Change{Kind: Drain, Instance: d.Name, Servers: []Server{s}})
			}
			continue
		}
		if old.Address != s.Address {
			refused = append(refused, Change{Kind: Refused, Instance: d.Name, Servers: []Server{s},
				Reason: fmt.Sprintf("server %d: address %v -> %v: a server id keeps its address (muxes and agents know it by id); remove it and add %v under another id", s.ID, old.Address, s.Address, s.Address)})
			continue
		}
		if old.Drained && !s.Drained {
			undrain = append(undrain, Change{Kind: Undrain, Instance: d.Name, Servers: []Server{s}})
		}
		if old.Weight != s.Weight {
			weights = append(weights, Change{Kind: SetWeight, Instance: d.Name, Servers: []Server{s}, OldWeight: old.Weight})
		}
		if !old.Drained && s.Drained {
			drain = append(drain, Change{Kind: Drain, Instance: d.Name, Servers: []Server{s}})
		}
	}
	for _, s := range c.Servers {
		if !keep[s.ID] {
			remove = append(remove, s)
		}
	}
	out := refused
	if len(add) > 0 {
		out = append(out, Change{Kind: AddServers, Instance: d.Name, Servers: add})
	}
	if len(remove) > 0 {
		out = append(out, Change{Kind: RemoveServers, Instance: d.Name, Servers: remove})
	}
	out = append(out, undrain...)
	out = append(out, weights...)
	return append(out, drain...)
}

// configDiff names the create-only configuration fields that differ, with
// both values ("strategy: beamer -> maglev").
func configDiff(c, d *Instance) []string {
	cv, dv := reflect.ValueOf(effective(c)), reflect.ValueOf(effective(d))
	t := cv.Type()
	var out []string
	for i := range t.NumField() {
		a, _ := json.Marshal(cv.Field(i).Interface())
		b, _ := json.Marshal(dv.Field(i).Interface())
		if bytes.Equal(normalize(a), normalize(b)) {
			continue
		}
		name := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if w, ok := cv.Field(i).Interface().(time.Duration); ok {
			out = append(out, fmt.Sprintf("%s: %v -> %v", name, w, dv.Field(i).Interface()))
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s -> %s", name, a, b))
	}
	return out
}

// effective is the configuration with every default filled in as the
// controller and muxes read it, so that a file spelling out a default
// (max_chain: 4, health: {kind: agent}, encap: ipip) equals a live
// instance that left it out, and the other way round.
func effective(in *Instance) forwarding.Instance {
	c := *in.config()
	c.MaxChainLen = c.ChainLen()
	h := c.HealthProbe()
	c.Health = &h
	ids := c.ServerIDs()
	c.ServerIDRange = &ids
	if fill := c.Strategy.Spec().FillDefaults; fill != nil {
		fill(&c)
	}
	if c.Encap == "" {
		c.Encap = forwarding.EncapIPIP
	}
	if c.ICMPEcho == "" {
		c.ICMPEcho = forwarding.EchoDrop
	}
	return c
}

// normalize makes absent and empty the same: null, [] and {}.
func normalize(b []byte) []byte {
	switch string(b) {
	case "null", "[]", "{}", `""`, "0", "false":
		return nil
	}
	return b
}
