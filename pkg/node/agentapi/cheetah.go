package agentapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"

	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// CheetahPath takes the cookie keys of a Cheetah VIP (PUT) from the
// controller, and answers with the server's load for the p2c policy. It is
// the API's one write: the controller pushes the instance's keys to every
// agent of the instance once per round, so a new or restarted agent gets
// them within a round and a rotation reaches every server without hand
// configuration (docs/strategy-cheetah.md, "Keys and rotation").
const CheetahPath = "/v1/cheetah"

// CheetahPush is the body of PUT /v1/cheetah.
type CheetahPush struct {
	VIP netip.Addr `json:"vip"`
	// ID is the server's slot in the instance as the controller knows it:
	// the agent refuses keys for another id than its own, which would make
	// it write cookies naming another server.
	ID   uint16      `json:"id"`
	Keys cookie.Keys `json:"keys"`
}

// CheetahReport answers a push: the key id new connections now use and the
// server's load, its live TCP connections to the VIP (sock_diag).
type CheetahReport struct {
	VIP         netip.Addr `json:"vip"`
	KeyID       uint8      `json:"key_id"`
	Connections uint32     `json:"connections"`
}

// ErrNotCheetah is a push for a VIP the agent does not serve as Cheetah's:
// answered 403, nothing attached.
var ErrNotCheetah = errors.New("refused")

// maxPush bounds a push body (a push is ~200 bytes).
const maxPush = 4 << 10

// pushAllowed: only callers from the Options.PushFrom prefixes may push
// keys (the peer of an accepted TCP connection: not spoofable off path).
func (s *Server) pushAllowed(r *http.Request) error {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return err
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	a = a.Unmap()
	if slices.ContainsFunc(s.pushFrom, func(p netip.Prefix) bool { return p.Contains(a) }) {
		return nil
	}
	return fmt.Errorf("%v may not push cheetah keys (allowed: %v)", a, s.pushFrom)
}

func (s *Server) cheetahPush(w http.ResponseWriter, r *http.Request) {
	if s.cheetah == nil {
		fail(w, http.StatusNotFound, "this agent takes no cheetah keys (agent API without a cheetah handler)")
		return
	}
	if err := s.pushAllowed(r); err != nil {
		fail(w, http.StatusForbidden, "%v", err)
		return
	}
	var p CheetahPush
	dec := json.NewDecoder(io.LimitReader(r.Body, maxPush))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		fail(w, http.StatusBadRequest, "bad cheetah push: %v", err)
		return
	}
	if !slices.Contains(s.vips, p.VIP) {
		fail(w, http.StatusBadRequest, "vip %v is not served by this agent (its VIPs: %v)", p.VIP, s.vips)
		return
	}
	if p.Keys.Current > 1 || p.Keys.Keys[p.Keys.Current] == (cookie.Key{}) {
		fail(w, http.StatusBadRequest, "cheetah keys: current key id must be 0 or 1 and its key set")
		return
	}
	// In the server's namespace: the handler attaches the cookie writer to
	// the server's interface, found by name.
	if err := inNamespace(s.ns, func() error { return s.cheetah(p) }); err != nil {
		code := http.StatusConflict
		if errors.Is(err, ErrNotCheetah) {
			code = http.StatusForbidden
		}
		fail(w, code, "%v", err)
		return
	}
	select {
	case s.dumps <- struct{}{}:
		defer func() { <-s.dumps }()
	case <-r.Context().Done():
		return
	}
	rep, err := countConnections(s.ns, p.VIP, 1)
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "keys taken; counting connections: %v", err)
		return
	}
	writeJSON(w, http.StatusOK, CheetahReport{VIP: p.VIP, KeyID: p.Keys.Current, Connections: rep.Total})
}

// PushCheetah gives the agent its Cheetah keys for a VIP and returns the
// server's load.
func (c *Client) PushCheetah(ctx context.Context, agent netip.AddrPort, p CheetahPush) (*CheetahReport, error) {
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	body, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.scheme()+"://"+agent.String()+CheetahPath, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("agent %v: %w", agent, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxPush))
	if resp.StatusCode != http.StatusOK {
		var e ErrorReport
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = fmt.Sprintf("%q (not a beamer agent API answer)", b)
		}
		return nil, fmt.Errorf("agent %v: %s: %s", agent, resp.Status, e.Error)
	}
	var rep CheetahReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("agent %v: bad answer: %w", agent, err)
	}
	if rep.VIP != p.VIP || rep.KeyID != p.Keys.Current {
		return nil, fmt.Errorf("agent %v: answered for %v key id %d, pushed %v key id %d", agent, rep.VIP, rep.KeyID, p.VIP, p.Keys.Current)
	}
	return &rep, nil
}
