package beamercli

import (
	"strconv"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
)

// Every duration ctl prints is in seconds: "240s" in tables, a number in a
// field named *_seconds in JSON and YAML (docs/operations.md). formatSeconds
// is the tables' one formatter: as many decimals as the value has, no more.
func formatSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

// showDocument is `ctl show -o json|yaml`: the view, plus its durations in
// seconds. The view's own duration fields (instance.chain_window,
// awfd_age) are Go's nanoseconds, kept so that readers of the old fields
// go on working; the *_seconds fields are the documented ones.
type showDocument struct {
	*controller.View
	ChainWindowSeconds float64  `json:"chain_window_seconds"`
	AWFDAgeSeconds     *float64 `json:"awfd_age_seconds,omitempty"`
}

func newShowDocument(v *controller.View) showDocument {
	d := showDocument{View: v, ChainWindowSeconds: v.Instance.ChainWindow.Seconds()}
	if v.AWFD != nil {
		age := v.AWFDAge.Seconds()
		d.AWFDAgeSeconds = &age
	}
	return d
}
