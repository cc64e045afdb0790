package agentapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"

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
// answered 403, nothing attached. The agent's side of the push is
// Cheetah's route (pkg/strategy/cheetah/agent_api.go); the messages and
// the client stay here, where the controller reads them without the
// agent daemon.
var ErrNotCheetah = errors.New("refused")

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
	b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxPush))
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
