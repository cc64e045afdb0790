package agentapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"
)

// Client asks agents. The zero value works (http.DefaultTransport without
// a client timeout: give every call a context with a deadline).
type Client struct {
	HTTP *http.Client
	// Scheme is "https" when HTTP's transport speaks the controller's
	// mutual TLS (nodeauth.ClientConfig); "" is "http".
	Scheme string
}

func (c *Client) scheme() string {
	if c.Scheme == "" {
		return "http"
	}
	return c.Scheme
}

// maxReport bounds what a client reads from an agent: a report lists at
// most one entry per bucket (≤ 16M buckets, ~30 bytes each).
const maxReport = 512 << 20

func (c *Client) get(ctx context.Context, agent netip.AddrPort, path string, q url.Values, out any) error {
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	u := url.URL{Scheme: c.scheme(), Host: agent.String(), Path: path, RawQuery: q.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("agent %v: %w", agent, err)
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, maxReport)
	if resp.StatusCode != http.StatusOK {
		var e ErrorReport
		b, _ := io.ReadAll(io.LimitReader(body, 4096))
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = fmt.Sprintf("%q (not a beamer agent API answer: wrong agent_port, or an agent without --api?)", b)
		}
		return fmt.Errorf("agent %v: %s: %s", agent, resp.Status, e.Error)
	}
	if err := json.NewDecoder(body).Decode(out); err != nil {
		return fmt.Errorf("agent %v: bad answer: %w", agent, err)
	}
	return nil
}

// Health asks the agent at agent to connect to vip:port on its server
// within timeout. The error says why the probe failed: the agent could not
// be asked, or its connect failed (then with the kernel's reason).
func (c *Client) Health(ctx context.Context, agent netip.AddrPort, vip netip.Addr, port uint16, timeout time.Duration) error {
	return c.HealthExpect(ctx, agent, vip, port, timeout, Expect{})
}

// HealthExpect is Health telling the agent what the instance expects of it:
// an agent configured otherwise refuses (*MismatchError) without probing.
func (c *Client) HealthExpect(ctx context.Context, agent netip.AddrPort, vip netip.Addr, port uint16, timeout time.Duration, want Expect) error {
	q := url.Values{"vip": {vip.String()}, "port": {strconv.Itoa(int(port))}}
	if want.ServerID != 0 {
		q.Set("server_id", strconv.Itoa(int(want.ServerID)))
	}
	if want.Buckets != 0 {
		q.Set("buckets", strconv.FormatUint(uint64(want.Buckets), 10))
	}
	if want.Window > 0 {
		q.Set("window_s", strconv.FormatInt(int64(want.Window/time.Second), 10))
	}
	if timeout > 0 {
		q.Set("timeout_ms", strconv.FormatInt(max(timeout.Milliseconds(), 1), 10))
	}
	var rep HealthReport
	if err := c.get(ctx, agent, HealthPath, q, &rep); err != nil {
		return err
	}
	if !rep.OK && rep.Mismatch != "" {
		return &MismatchError{Agent: agent, VIP: vip, Reason: rep.Mismatch}
	}
	if !rep.OK {
		if rep.Error == "" {
			rep.Error = "failed"
		}
		return &ServiceError{Agent: agent, VIP: vip, Port: port, Reason: rep.Error}
	}
	return nil
}

// ServiceError is a health probe the agent answered: the server runs, the
// service on VIP:Port does not answer. (Any other error of Health means
// the agent itself could not be asked.)
type ServiceError struct {
	Agent  netip.AddrPort
	VIP    netip.Addr
	Port   uint16
	Reason string
}

func (e *ServiceError) Error() string {
	return fmt.Sprintf("agent %v: connect %v:%d on the server: %s", e.Agent, e.VIP, e.Port, e.Reason)
}

// MismatchError is an agent refusing a probe because it is configured
// for another instance than the one probed for (wrong server id, bucket
// count or chaining window): the server runs, but must not get buckets.
type MismatchError struct {
	Agent  netip.AddrPort
	VIP    netip.Addr
	Reason string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("agent %v refuses: configured otherwise than the instance for %v: %s", e.Agent, e.VIP, e.Reason)
}

// Connections asks the agent how many connections of vip it holds in each
// bucket of a table of n buckets. The answer is checked: right VIP and
// table size, buckets in range and increasing, counts adding up.
func (c *Client) Connections(ctx context.Context, agent netip.AddrPort, vip netip.Addr, n uint32) (*ConnectionsReport, error) {
	q := url.Values{"vip": {vip.String()}, "buckets": {strconv.FormatUint(uint64(n), 10)}}
	var rep ConnectionsReport
	if err := c.get(ctx, agent, ConnectionsPath, q, &rep); err != nil {
		return nil, err
	}
	if rep.VIP != vip || rep.Buckets != n {
		return nil, fmt.Errorf("agent %v: answered for %v with %d buckets, asked %v with %d", agent, rep.VIP, rep.Buckets, vip, n)
	}
	var sum uint64
	for i, bc := range rep.Counts {
		if bc.Bucket >= n || (i > 0 && bc.Bucket <= rep.Counts[i-1].Bucket) || bc.Count == 0 {
			return nil, fmt.Errorf("agent %v: bad bucket list at entry %d (bucket %d, count %d)", agent, i, bc.Bucket, bc.Count)
		}
		sum += uint64(bc.Count)
	}
	if sum != uint64(rep.Total) {
		return nil, fmt.Errorf("agent %v: counts add up to %d, total says %d", agent, sum, rep.Total)
	}
	return &rep, nil
}
