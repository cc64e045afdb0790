package lab

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// DemoOptions shape the demo scenario.
type DemoOptions struct {
	Clients, PerClient, Servers int
	Buckets                     uint32
	FileSize                    int
	Step                        time.Duration // time between events
	Strategy                    string
	Beamer                      string
}

// DefaultDemo is what `beamer demo` runs.
var DefaultDemo = DemoOptions{Clients: 2, PerClient: 25, Servers: 3, Buckets: 300, FileSize: 64 << 10, Step: 3 * time.Second, Strategy: "beamer"}

// RunDemo builds a lab, starts a load balancer with two servers on the
// embedded store, keeps persistent HTTP connections downloading through it
// while a server is added and another removed, and reports what the
// clients saw.
func RunDemo(ctx context.Context, o DemoOptions, out io.Writer) (_ Summary, err error) {
	say := func(format string, a ...any) {
		fmt.Fprintf(out, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
	}
	dir, err := os.MkdirTemp("", "beamer-demo-")
	if err != nil {
		return Summary{}, err
	}
	defer os.RemoveAll(dir)
	say("building the lab: fabric, controller (embedded etcd), mux, %d servers, %d clients", o.Servers, o.Clients)
	var l *Lab
	l, err = Start(ctx, Options{Beamer: o.Beamer, Dir: dir, Servers: o.Servers, Clients: o.Clients, Buckets: o.Buckets,
		Window: 4 * time.Minute, FileSize: o.FileSize, Strategy: o.Strategy})
	if err != nil {
		return Summary{}, err
	}
	defer func() {
		if err != nil {
			fmt.Fprintf(out, "daemon logs:\n%s", l.procs.logs())
		}
		say("cleaning up: stopping daemons, removing namespaces")
		l.Close()
	}()
	ctl := func(args ...string) error {
		out, err := l.Ctl(args...)
		if err != nil {
			return err
		}
		say("beamer ctl %s", strings.Join(args, " "))
		_ = out
		return nil
	}
	if err = ctl("create", "demo", "--vip", VIP.String(), "--ports", "80", "--buckets", fmt.Sprint(o.Buckets), "--strategy", o.Strategy); err != nil {
		return Summary{}, err
	}
	for i := 0; i < 2; i++ {
		if err = l.StartServer(i); err != nil {
			return Summary{}, err
		}
		if err = ctl("add-dip", "demo", fmt.Sprint(ServerID(i)), serverAddr(i).String()); err != nil {
			return Summary{}, err
		}
	}
	if err = l.StartMux("demo"); err != nil {
		return Summary{}, err
	}
	say("mux forwarding %s; %d clients × %d persistent HTTP connections downloading %d KiB files", VIP, o.Clients, o.PerClient, o.FileSize>>10)
	load := l.StartLoad(o.PerClient, 10*time.Second)
	newFailed := 0
	wait := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(o.Step):
		}
		s := load.Snapshot()
		say("  open connections: %d requests, %d/%d broken, served by: %s", s.Requests, s.Broken, s.Connections, byServer(s.Servers))
		by, failed := l.Probe(30, 5*time.Second)
		counts := map[string]uint64{}
		for k, v := range by {
			counts[k] = uint64(v)
		}
		say("  30 new connections land on: %s (%d failed)", byServer(counts), failed)
		newFailed += failed
		return true
	}
	steps := []func() error{
		func() error { return nil },
		func() error {
			if err := l.StartServer(2); err != nil {
				return err
			}
			return ctl("add-dip", "demo", fmt.Sprint(ServerID(2)), serverAddr(2).String())
		},
		func() error { return ctl("remove-dip", "demo", fmt.Sprint(ServerID(0))) },
	}
	for _, step := range steps {
		if err = step(); err != nil {
			load.Stop()
			return Summary{}, err
		}
		if !wait() {
			break
		}
	}
	if show, err := l.Ctl("show", "demo"); err == nil {
		fmt.Fprintln(out, indent(show))
	}
	s := load.Stop()
	for _, e := range s.Errors {
		say("  broken: %s", e)
	}
	if newFailed > 0 {
		say("  %d new connections failed", newFailed)
		s.Broken += newFailed
	}
	return s, nil
}

func byServer(m map[string]uint64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d ", k, m[k])
	}
	return strings.TrimSpace(b.String())
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }
