package beamercli

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"reflect"
	"syscall"

	"github.com/beamer-lb/beamer/pkg/node/agentd"
	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/beamer-lb/beamer/pkg/node/muxd"
)

// SIGHUP reloads a static configuration file (`systemctl reload`): the mux's
// instances and servers, the agent's whole configuration. A file that does
// not load or validate is refused with a log line and the running
// configuration stays. Without --config there is nothing to reload: the
// signal is logged and ignored (never the default: exit).

// hangups starts catching SIGHUP, before anything that takes time.
func hangups() <-chan os.Signal {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	return ch
}

// ignoreHangups logs and ignores SIGHUP (daemons following the store).
func ignoreHangups(ctx context.Context, hup <-chan os.Signal, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			log.Info("SIGHUP ignored: nothing to reload (the store is followed continuously); restart to change flags")
		}
	}
}

// reloadMux applies the file's instances on each SIGHUP: new and changed
// instances are loaded whole, instances no longer in the file removed.
// Interface, address, XDP mode and metrics address need a restart.
func reloadMux(ctx context.Context, hup <-chan os.Signal, path string, d *muxd.Daemon, cur *config.Mux, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		c, err := config.LoadMux(path)
		if err != nil {
			log.Error("SIGHUP: configuration refused, the running one stays", "file", path, "error", err)
			continue
		}
		if c.Interface != cur.Interface || c.Address != cur.Address || c.XDPMode != cur.XDPMode || c.Metrics != cur.Metrics {
			log.Warn("SIGHUP: interface, address, xdp_mode and metrics changes take effect at the next restart; reloading the instances only", "file", path)
		}
		in := map[string]bool{}
		failed := false
		for _, x := range c.Instances {
			in[x.Name] = true
			if err := d.SetInstance(x.Instance, x.Table()); err != nil {
				log.Error("SIGHUP: instance not reloaded, its previous state stays", "instance", x.Name, "error", err)
				failed = true
			}
		}
		for _, x := range cur.Instances {
			if !in[x.Name] {
				if err := d.RemoveInstance(x.Name); err != nil {
					log.Error("SIGHUP: removing instance", "instance", x.Name, "error", err)
				}
			}
		}
		cur = c
		if !failed {
			log.Info("configuration reloaded", "file", path, "instances", len(c.Instances))
		}
	}
}

// reloadAgent restarts the agent's setup from the file on each SIGHUP: the
// running agent hands over as for an upgrade (its program stays pinned and
// decapsulating), a new one starts from the new configuration and takes the
// pinned program over. It returns the agent in force; an error means no
// agent runs in this process any more (the pinned program still forwards).
func reloadAgent(ctx context.Context, hup <-chan os.Signal, load func() (config.Agent, error), d *agentd.Daemon, cur config.Agent, node agentd.Options, log *slog.Logger) (*agentd.Daemon, error) {
	for {
		select {
		case <-ctx.Done():
			return d, nil
		case <-hup:
		}
		c, err := load()
		if err != nil {
			log.Error("SIGHUP: configuration refused, the running one stays", "error", err)
			continue
		}
		if reflect.DeepEqual(c, cur) {
			log.Info("SIGHUP: configuration unchanged")
			continue
		}
		if err := d.Abandon(); err != nil {
			log.Warn("SIGHUP: handing over", "error", err)
		}
		nd, err := agentd.Start(c, node)
		if err != nil {
			return nil, err
		}
		d, cur = nd, c
		log.Info("configuration reloaded", "interface", c.Interface, "server_id", c.ServerID, "vips", len(c.VIPs))
	}
}
