package beamercli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi/mgmtv1"
	"github.com/spf13/cobra"
)

// watchLine is one event of `ctl watch -o json` (one JSON object a line).
type watchLine struct {
	Time       time.Time `json:"time"`
	Kind       string    `json:"kind"`
	Instance   string    `json:"instance"`
	ServerID   uint32    `json:"server_id,omitempty"`
	Old        string    `json:"old,omitempty"`
	New        string    `json:"new,omitempty"`
	Generation uint32    `json:"generation"`
}

var errWatchDone = errors.New("enough events")

// `ctl watch [NAME]`: the management API's Watch stream, for people and
// scripts: instances created and deleted, generations, servers' health,
// state and drain.
func addCtlWatch(ctl *cobra.Command) {
	cmd, f := newCtl(ctl, "watch [NAME]", "Print changes of instances and servers as they happen (health, state, drain, generations) until interrupted", cobra.MaximumNArgs(1))
	format := cmd.Flags().StringP("output", "o", "table", "output format: table (one line an event) or json (one object a line)")
	count := cmd.Flags().Int("count", 0, "stop after this many events (0: run until interrupted)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if *format != "table" && *format != "json" {
			return fmt.Errorf("--output %q: want table or json", *format)
		}
		if *count < 0 {
			return fmt.Errorf("--count %d is negative", *count)
		}
		name := ""
		if len(args) == 1 {
			name = args[0]
		}
		c, err := f.api.client()
		if err != nil {
			return err
		}
		defer c.Close()
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		out, n := cmd.OutOrStdout(), 0
		err = c.Watch(ctx, name, func(e *mgmtv1.WatchEvent) error {
			if err := printWatch(out, *format, e); err != nil {
				return err
			}
			if n++; *count > 0 && n >= *count {
				return errWatchDone
			}
			return nil
		})
		if errors.Is(err, errWatchDone) || ctx.Err() != nil {
			return nil
		}
		return err
	}
}

func printWatch(w io.Writer, format string, e *mgmtv1.WatchEvent) error {
	l := watchLine{Time: e.GetTime().AsTime().UTC(), Kind: e.GetKind(), Instance: e.GetInstance(), ServerID: e.GetServerId(),
		Old: e.GetOldValue(), New: e.GetNewValue(), Generation: e.GetGeneration()}
	if format == "json" {
		return json.NewEncoder(w).Encode(l)
	}
	what := l.Instance
	if l.ServerID != 0 {
		what = fmt.Sprintf("%s server %d", l.Instance, l.ServerID)
	}
	change := l.New
	if l.Old != "" || l.Kind != "instance" {
		change = fmt.Sprintf("%s -> %s", orNone(l.Old), orNone(l.New))
	}
	_, err := fmt.Fprintf(w, "%s %-10s %s: %s (generation %d)\n", l.Time.Format(time.RFC3339), l.Kind, what, change, l.Generation)
	return err
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
