package declarative

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
	"go.yaml.in/yaml/v3"
)

// maxDocument bounds what Parse reads: a document of 32K servers is about
// 2 MB.
const maxDocument = 64 << 20

// Parse reads and validates a document strictly: unknown keys, a missing
// or other apiVersion, a second YAML document, duplicate instance names,
// server ids or addresses and every invalid configuration are refused.
// Errors name the file (source), the instance and the field.
func Parse(source string, r io.Reader) (*Document, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxDocument+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if len(b) > maxDocument {
		return nil, fmt.Errorf("%s: larger than %d bytes", source, maxDocument)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var d Document
	if err := dec.Decode(&d); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty document (want apiVersion: %s and instances)", source, APIVersion)
		}
		return nil, fmt.Errorf("%s: %w", source, nameInstances(b, err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: more than one YAML document (the state is one document)", source)
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return &d, nil
}

// Validate checks the document as Parse does (without the YAML part).
func (d *Document) Validate() error {
	if d.APIVersion != APIVersion {
		return fmt.Errorf("apiVersion %q: this beamer reads %q", d.APIVersion, APIVersion)
	}
	names := map[string]bool{}
	vips := map[netip.Addr]string{}
	for i := range d.Instances {
		in := &d.Instances[i]
		if names[in.Name] {
			return fmt.Errorf("instances[%d]: instance %q listed twice", i, in.Name)
		}
		names[in.Name] = true
		if err := in.validate(); err != nil {
			if in.Name == "" {
				return fmt.Errorf("instances[%d]: %w", i, err)
			}
			return fmt.Errorf("instance %q: %w", in.Name, err)
		}
		for _, a := range in.VIPs {
			if other, dup := vips[a]; dup {
				return fmt.Errorf("instance %q: vips: %v is also a VIP of instance %q", in.Name, a, other)
			}
			vips[a] = in.Name
		}
	}
	return nil
}

func (in *Instance) validate() error {
	c := in.config()
	if c.Cheetah != nil {
		// The keys are not part of the document; a placeholder lets the
		// controller's own checks run on the rest.
		c.Cheetah.Keys.Keys[0] = cookie.Key{1}
	} else if spec := c.Strategy.Spec(); spec.OptionsRequired && !spec.HasOptions(c) {
		return fmt.Errorf("%s: strategy %s needs its %s: block", c.Strategy, c.Strategy, c.Strategy)
	}
	if err := controller.CheckInstance(c); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	ids := map[forwarding.ServerID]int{}
	addrs := map[netip.Addr]int{}
	for j, s := range in.Servers {
		field := fmt.Sprintf("servers[%d] (id %d)", j, s.ID)
		if k, dup := ids[s.ID]; dup {
			return fmt.Errorf("%s: id also used by servers[%d]", field, k)
		}
		ids[s.ID] = j
		if !s.Address.IsValid() {
			return fmt.Errorf("%s: address missing", field)
		}
		if k, dup := addrs[s.Address]; dup {
			return fmt.Errorf("%s: address %v also used by servers[%d]", field, s.Address, k)
		}
		addrs[s.Address] = j
		// The rules of one server are the instance's (the same words as
		// ctl add-dip); the document's own are the duplicates and VIPs.
		if err := c.CheckServer(s.ID, s.Address, s.Weight); err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
		for _, v := range c.VIPs {
			if v == s.Address {
				return fmt.Errorf("%s: address %v is one of the instance's VIPs", field, v)
			}
		}
	}
	if len(in.Servers) > 0 && uint64(len(in.Servers)) >= uint64(in.Buckets) {
		return fmt.Errorf("servers: %d servers need more than %d buckets", len(in.Servers), in.Buckets)
	}
	return nil
}

// Marshal writes the document as YAML, the form Parse reads.
func (d *Document) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// nameInstances adds to the YAML decoder's errors ("line 12: field x not
// found ...") the name of the instance whose entry holds that line.
func nameInstances(text []byte, err error) error {
	var root yaml.Node
	if yaml.Unmarshal(text, &root) != nil || len(root.Content) == 0 {
		return err
	}
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		// A value's own parser failed (an address, a port list): its
		// error has no line, so find the instance by decoding each alone.
		return inInstance(&root, err)
	}
	type span struct {
		line int
		name string
	}
	var spans []span // the first line of each instance entry, in order
	top := root.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value != "instances" || top.Content[i+1].Kind != yaml.SequenceNode {
			continue
		}
		for k, item := range top.Content[i+1].Content {
			name := fmt.Sprintf("instances[%d]", k)
			for j := 0; j+1 < len(item.Content); j += 2 {
				if item.Content[j].Value == "name" {
					name = fmt.Sprintf("instance %q", item.Content[j+1].Value)
				}
			}
			spans = append(spans, span{item.Line, name})
		}
	}
	msgs := make([]string, len(te.Errors))
	for i, e := range te.Errors {
		msgs[i] = e
		var line int
		if _, serr := fmt.Sscanf(e, "line %d:", &line); serr != nil {
			continue
		}
		for k := len(spans) - 1; k >= 0; k-- {
			if spans[k].line <= line {
				msgs[i] = spans[k].name + ": " + e
				break
			}
		}
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

// inInstance names the instance whose entry alone fails to decode.
func inInstance(root *yaml.Node, err error) error {
	top := root.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value != "instances" {
			continue
		}
		for k, item := range top.Content[i+1].Content {
			b, merr := yaml.Marshal(item)
			if merr != nil {
				continue
			}
			dec := yaml.NewDecoder(bytes.NewReader(b))
			dec.KnownFields(true)
			var in Instance
			if ierr := dec.Decode(&in); ierr != nil {
				name := fmt.Sprintf("instances[%d]", k)
				if in.Name != "" {
					name = fmt.Sprintf("instance %q", in.Name)
				}
				return fmt.Errorf("%s (line %d): %w", name, item.Line, err)
			}
		}
	}
	return err
}
