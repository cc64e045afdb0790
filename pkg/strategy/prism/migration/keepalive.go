package migration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// KeepAlivePath is where a mux daemon hands out the keep-alive bits of a
// Prism instance's MCT (POST: reading them clears them). It is served on
// the mux's --metrics address.
const KeepAlivePath = "/v1/prism/keepalive"

// KeepAliveReport is one mux's answer: the MCT signatures a packet went
// through this mux for since the previous report, and what the mux runs.
type KeepAliveReport struct {
	Instance   string   `json:"instance"`
	Generation uint32   `json:"generation"` // the generation the mux has applied
	Entries    int      `json:"entries"`    // entries in its MCT map
	Hit        []uint64 `json:"hit"`        // signatures hit since the last report
}

// KeepAliveClient asks mux daemons for their bits over HTTP.
type KeepAliveClient struct {
	HTTP *http.Client // default: http.DefaultClient (callers bound the time with ctx)
	// Scheme is "https" when HTTP speaks the controller's mutual TLS
	// (nodeauth.ClientConfig); "" is "http".
	Scheme string
}

// MaxKeepAliveBytes bounds a report read (4M entries, about 21 bytes each).
const MaxKeepAliveBytes = 128 << 20

// KeepAlive collects (and so clears) the bits of instance from the mux
// daemon serving addr (host:port).
func (c *KeepAliveClient) KeepAlive(ctx context.Context, addr, instance string) (*KeepAliveReport, error) {
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	scheme := c.Scheme
	if scheme == "" {
		scheme = "http"
	}
	u := scheme + "://" + addr + KeepAlivePath + "?instance=" + url.QueryEscape(instance)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("mux %s: %s: %s", addr, resp.Status, msg)
	}
	var r KeepAliveReport
	if err := json.NewDecoder(io.LimitReader(resp.Body, MaxKeepAliveBytes)).Decode(&r); err != nil {
		return nil, fmt.Errorf("mux %s: bad keep-alive report: %w", addr, err)
	}
	if r.Instance != instance {
		return nil, fmt.Errorf("mux %s: report of instance %q, asked for %q", addr, r.Instance, instance)
	}
	return &r, nil
}
