package cheetah

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// servePush answers PUT /v1/cheetah (agentapi.CheetahPath), the agent
// API's one write: the controller pushes the instance's keys to every
// agent of the instance once per round, and the agent answers with its
// load, the live TCP connections to the VIP (for the p2c policy). Only
// callers from the controllers' prefixes may push; the keys are never
// answered back.
func (k *keyHolder) servePush(s *agentapi.Server, w http.ResponseWriter, r *http.Request) {
	if err := s.PushAllowed(r, "cheetah keys"); err != nil {
		agentapi.Fail(w, http.StatusForbidden, "%v", err)
		return
	}
	var p agentapi.CheetahPush
	dec := json.NewDecoder(io.LimitReader(r.Body, agentapi.MaxPush))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		agentapi.Fail(w, http.StatusBadRequest, "bad cheetah push: %v", err)
		return
	}
	if ok, vips := s.Serves(p.VIP); !ok {
		agentapi.Fail(w, http.StatusBadRequest, "vip %v is not served by this agent (its VIPs: %v)", p.VIP, vips)
		return
	}
	if p.Keys.Current > 1 || p.Keys.Keys[p.Keys.Current] == (cookie.Key{}) {
		agentapi.Fail(w, http.StatusBadRequest, "cheetah keys: current key id must be 0 or 1 and its key set")
		return
	}
	// In the server's namespace: the handler attaches the cookie writer to
	// the server's interface, found by name.
	if err := s.InNamespace(func() error { return k.take(p) }); err != nil {
		code := http.StatusConflict
		if errors.Is(err, agentapi.ErrNotCheetah) {
			code = http.StatusForbidden
		}
		agentapi.Fail(w, code, "%v", err)
		return
	}
	n, err := s.Connections(r.Context(), p.VIP)
	if r.Context().Err() != nil {
		return // the caller is gone
	}
	if err != nil {
		agentapi.Fail(w, http.StatusServiceUnavailable, "keys taken; counting connections: %v", err)
		return
	}
	agentapi.WriteJSON(w, http.StatusOK, agentapi.CheetahReport{VIP: p.VIP, KeyID: p.Keys.Current, Connections: n})
}
