package lab

import (
	"fmt"
	"os"
	"strings"

	"github.com/beamer-lb/beamer/pkg/controlplane/declarative"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// ApplyServers makes servers idx… the lab instance's whole pool the
// declarative way, as an operator editing the exported file would: `ctl
// export`, the instance's server list replaced (servers already in the
// pool keep their entries; new ones get weight 1), `ctl apply -f`. Servers
// not running are started first; servers left out keep serving their
// connections, which the controller daisy-chains to them.
func (l *Lab) ApplyServers(idx ...int) error {
	want := map[int]bool{}
	for _, i := range idx {
		s, err := l.server(i)
		if err != nil {
			return err
		}
		if want[i] {
			return fmt.Errorf("server %d listed twice", i)
		}
		want[i] = true
		if s.agent == nil {
			if err := l.startServer(i, s); err != nil {
				return err
			}
		}
	}
	out, err := l.Ctl("export")
	if err != nil {
		return err
	}
	doc, err := declarative.Parse("ctl export", strings.NewReader(out))
	if err != nil {
		return err
	}
	var in *declarative.Instance
	for k := range doc.Instances {
		if doc.Instances[k].Name == Instance {
			in = &doc.Instances[k]
		}
	}
	if in == nil {
		return fmt.Errorf("ctl export has no instance %q", Instance)
	}
	had := map[forwarding.ServerID]declarative.Server{}
	for _, s := range in.Servers {
		had[s.ID] = s
	}
	in.Servers = nil
	for _, i := range idx {
		id := forwarding.ServerID(ServerID(i))
		s, ok := had[id]
		if !ok {
			s = declarative.Server{ID: id, Address: l.dip(i), Weight: 1}
		}
		in.Servers = append(in.Servers, s)
	}
	b, err := doc.Marshal()
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(l.opts.Dir, "apply-*.yaml") // kept with the run's logs
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if _, err := l.Ctl("apply", "-f", f.Name()); err != nil {
		return err
	}
	for i, s := range l.servers {
		s.inPool = want[i]
	}
	return nil
}
