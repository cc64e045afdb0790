package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
)

// A request naming many DIPs (the paper adds 32K at once: about 1.4 MB of
// JSON) does not fit one store value (1 MiB on etcd, 1000 KiB on
// ZooKeeper). Its DIP list then goes in parts, REQUEST/part/000000 …,
// written before the request itself; the request carries how many. A
// request is visible only once its own key is written, so the controller
// never sees part of one. Parts left by a ctl that died before writing
// its request are deleted by the controller once they are older than
// finishedTTL (the key names the submission time).

// partBudget is the share of a store value a part's JSON may fill.
func partBudget(st store.Store) int { return st.MaxValueSize() * 3 / 4 }

func partKey(key string, i int) string { return fmt.Sprintf("%s/part/%06d", key, i) }

// requestPart is one part's content.
type requestPart struct {
	DIPs []NewDIP              `json:"dips,omitempty"`
	IDs  []forwarding.ServerID `json:"ids,omitempty"`
}

// writeParts moves r's lists into parts when r is too large for one
// value, and returns r's value to write.
func writeParts(ctx context.Context, st store.Store, key string, r *Request) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil || len(b) <= partBudget(st) {
		return b, err
	}
	// Cut by measured size: each part holds as many entries as fit.
	per := max(1, len(r.DIPs)+len(r.IDs))
	for {
		parts := splitLists(r, per)
		ok := true
		for _, p := range parts {
			pb, _ := json.Marshal(p)
			if len(pb) > partBudget(st) {
				ok = false
				break
			}
		}
		if ok {
			for i, p := range parts {
				pb, _ := json.Marshal(p)
				if err := st.Commit(ctx, store.Put(partKey(key, i), pb)); err != nil {
					return nil, fmt.Errorf("submit request part %d: %w", i, err)
				}
			}
			head := *r
			head.DIPs, head.IDs, head.Parts = nil, nil, len(parts)
			return json.Marshal(&head)
		}
		per = max(1, per/2)
	}
}

func splitLists(r *Request, per int) []requestPart {
	var parts []requestPart
	for d := r.DIPs; len(d) > 0; {
		n := min(per, len(d))
		parts = append(parts, requestPart{DIPs: d[:n]})
		d = d[n:]
	}
	for ids := r.IDs; len(ids) > 0; {
		n := min(per, len(ids))
		parts = append(parts, requestPart{IDs: ids[:n]})
		ids = ids[n:]
	}
	return parts
}

// readParts fills in the lists of a request written in parts.
func readParts(ctx context.Context, st store.Store, key string, r *Request) error {
	if r.Parts <= 0 {
		return nil
	}
	if r.Parts > 1<<16 {
		return badf("request names %d parts", r.Parts)
	}
	for i := range r.Parts {
		it, err := st.Get(ctx, partKey(key, i))
		if errors.Is(err, store.ErrNotFound) {
			return badf("request part %d of %d is missing", i, r.Parts)
		}
		if err != nil {
			return err
		}
		var p requestPart
		if err := json.Unmarshal(it.Value, &p); err != nil {
			return badf("request part %d: %v", i, err)
		}
		r.DIPs, r.IDs = append(r.DIPs, p.DIPs...), append(r.IDs, p.IDs...)
	}
	return nil
}

// headOf is the value to write back for r: without the lists when they
// live in parts.
func headOf(r *Request) *Request {
	if r.Parts == 0 {
		return r
	}
	h := *r
	h.DIPs, h.IDs = nil, nil
	return &h
}

// deleteRequest removes a request and its parts.
func deleteRequest(ctx context.Context, st store.Store, key string) error {
	if err := st.Commit(ctx, store.Delete(key)); err != nil {
		return err
	}
	return store.DeleteTree(ctx, st, key)
}

// staleOrphan reports whether name (TIME-RAND) is older than finishedTTL:
// parts without a request that old come from a ctl that died while
// submitting.
func staleOrphan(name string, now time.Time) bool {
	ts, _, ok := strings.Cut(name, "-")
	n, err := strconv.ParseInt(ts, 10, 64)
	return ok && err == nil && now.Sub(time.Unix(0, n)) > finishedTTL
}
