package beamercli

import (
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// parseAddDIPs reads the DIPs of `ctl add-dip`: ID ADDR [WEIGHT] (one DIP,
// the original form) or ID ADDR pairs, all with weight w.
func parseAddDIPs(args []string, w string, weightFlag bool) ([]controller.NewDIP, error) {
	weight, err := parseWeight(w)
	if err != nil {
		return nil, fmt.Errorf("--weight: %w", err)
	}
	if len(args) == 3 {
		if weightFlag {
			return nil, fmt.Errorf("give the weight either as the third argument or with --weight, not both")
		}
		if weight, err = parseWeight(args[2]); err != nil {
			return nil, err
		}
		args = args[:2]
	}
	if len(args)%2 != 0 {
		return nil, fmt.Errorf("want ID ADDR [WEIGHT] or ID ADDR pairs, got %d arguments after the instance name", len(args))
	}
	var out []controller.NewDIP
	for i := 0; i < len(args); i += 2 {
		id, err := parseID(args[i])
		if err != nil {
			return nil, err
		}
		addr, err := netip.ParseAddr(args[i+1])
		if err != nil {
			return nil, fmt.Errorf("DIP address %q is not an IPv4 or IPv6 address", args[i+1])
		}
		if err := forwarding.CheckDIP(addr); err != nil {
			return nil, err // the controller would say the same; say it before submitting
		}
		out = append(out, controller.NewDIP{ID: id, Addr: addr, Weight: weight})
	}
	return out, nil
}

// printHealthDetails prints, under the DIP table, why DIPs are not plainly
// up: reason of the last change, last probe error, flap penalty.
func printHealthDetails(out io.Writer, v *controller.View) {
	for _, d := range v.DIPs {
		if d.Health == "up" && d.PenaltyNow < 0.01 && d.LastError == "" {
			continue
		}
		fmt.Fprintf(out, "DIP %d: %s", d.ID, d.Health)
		if d.Reason != "" {
			fmt.Fprintf(out, " (%s)", d.Reason)
		}
		if !d.HealthChanged.IsZero() {
			fmt.Fprintf(out, ", changed %s", d.HealthChanged.Format(time.RFC3339))
		}
		if d.PenaltyNow >= 0.01 {
			fmt.Fprintf(out, ", flap penalty %.2f", d.PenaltyNow)
		}
		if d.Suppressed {
			fmt.Fprintf(out, ", suppressed (clear: beamer ctl health clear %s %d)", v.Instance.Name, d.ID)
		}
		if d.LastError != "" {
			fmt.Fprintf(out, "; last probe error at %s: %s", d.LastErrorAt.Format(time.RFC3339), d.LastError)
		}
		fmt.Fprintln(out)
	}
}
