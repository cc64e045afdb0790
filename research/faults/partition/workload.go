package partition

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/beamer-lb/beamer/research/faults/history"
	"github.com/beamer-lb/beamer/research/lab"
)

// requestTimeout is `beamer ctl --timeout` for the workload's requests:
// the controller's verdict is awaited that long (ctl gives the call 2 s
// more), after which the outcome is unknown.
const requestTimeout = 5 * time.Second

// listed is what `beamer ctl list -o json` prints (the fields read here).
type listed struct {
	Controller string `json:"controller"`
	Instances  []struct {
		Name        string `json:"name"`
		Incarnation uint32 `json:"incarnation"`
		Generation  uint32 `json:"generation"`
		Servers     []struct {
			ID     uint16 `json:"id"`
			Weight uint32 `json:"weight"`
			State  string `json:"state"`
		} `json:"servers"`
		Error string `json:"error"`
	} `json:"instances"`
}

// snapshot is the lab instance's state as `ctl list` shows it.
type snapshot struct {
	Controller              string
	Incarnation, Generation uint32
	State                   map[string]string // history keys: server/ID → wN (absent: removed)
}

// readState runs `ctl list -o json` and returns the lab instance's state.
func readState(l *lab.Lab) (snapshot, error) {
	out, err := l.Ctl("list", "-o", "json", "--timeout", "5s")
	if err != nil {
		return snapshot{}, err
	}
	var v listed
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		return snapshot{}, fmt.Errorf("ctl list: %w: %q", err, out)
	}
	for _, in := range v.Instances {
		if in.Name != lab.Instance {
			continue
		}
		if in.Error != "" {
			return snapshot{}, fmt.Errorf("ctl list: %s", in.Error)
		}
		s := snapshot{Controller: v.Controller, Incarnation: in.Incarnation, Generation: in.Generation, State: map[string]string{}}
		for _, sv := range in.Servers {
			if sv.State != "removing" {
				s.State[serverKey(int(sv.ID))] = weightValue(sv.Weight)
			}
		}
		return s, nil
	}
	return snapshot{}, errors.New("ctl list: no instance " + lab.Instance)
}

func serverKey(id int) string     { return fmt.Sprintf("server/%d", id) }
func weightValue(w uint32) string { return fmt.Sprintf("w%d", w) }
func hostIndex(identity string) int { // "ctl2" → 2; -1 if unknown
	var i int
	if _, err := fmt.Sscanf(identity, "ctl%d", &i); err != nil {
		return -1
	}
	return i
}

// workload sends one ctl request at a time — add a server, remove one,
// change a weight — and records each outcome.
type workload struct {
	l       *lab.Lab
	rng     *rand.Rand
	servers int
	pause   [2]time.Duration // between requests, at random in [min, max)
	max     int              // bound on the number of requests

	mu       sync.Mutex
	requests []history.Request
	believed map[int]uint32 // server index → weight as last acknowledged; absent: removed
}

func newWorkload(l *lab.Lab, seed uint64, servers int, weights map[int]uint32) *workload {
	return &workload{l: l, rng: rand.New(rand.NewPCG(seed, 0x776f726b)), servers: servers, pause: [2]time.Duration{200 * time.Millisecond, 700 * time.Millisecond},
		max: 2000, believed: weights}
}

// run sends requests until ctx ends or the bound is reached.
func (w *workload) run(ctx context.Context) {
	for id := 1; id <= w.max && ctx.Err() == nil; id++ {
		w.one(id)
		d := w.pause[0] + time.Duration(w.rng.Int64N(int64(w.pause[1]-w.pause[0])))
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
}

// next picks a request: a removed server is added again, a server is
// removed if two others stay, else a weight changes to a new value.
func (w *workload) next() (op []string, key, value string, apply func()) {
	i := w.rng.IntN(w.servers)
	id := lab.ServerID(i)
	key = serverKey(id)
	weight, in := w.believed[i]
	switch {
	case !in:
		return []string{"add-dip", lab.Instance, fmt.Sprint(id), w.l.ServerDIP(i).String()}, key, weightValue(1), func() { w.believed[i] = 1 }
	case len(w.believed) > 2 && w.rng.IntN(4) == 0:
		return []string{"remove-dip", lab.Instance, fmt.Sprint(id)}, key, history.Absent, func() { delete(w.believed, i) }
	default:
		nw := uint32(1 + w.rng.IntN(9))
		if nw == weight {
			nw = nw%9 + 1
		}
		return []string{"set-weight", lab.Instance, fmt.Sprint(id), fmt.Sprint(nw)}, key, weightValue(nw), func() { w.believed[i] = nw }
	}
}

func (w *workload) one(id int) {
	op, key, value, apply := w.next()
	r := history.Request{ID: id, Op: strings.Join(op, " "), Key: key, Value: value, Start: time.Now()}
	_, err := w.l.Ctl(append(op, "--timeout", requestTimeout.String())...)
	r.End = time.Now()
	switch {
	case err == nil:
		r.Outcome = history.OK
		apply()
		// ctl does not print the generation a change was published at:
		// the store's latest, read right after, is at or after it.
		if s, err := readState(w.l); err == nil {
			r.Generation = s.Generation
		}
	case unknownOutcome(err):
		r.Outcome, r.Err = history.Unknown, lastLine(ctlMessage(err.Error()))
	default:
		r.Outcome, r.Err = history.Failed, lastLine(ctlMessage(err.Error()))
	}
	if err != nil {
		// What the workload believes follows the store again, so that
		// its next requests make sense (add a server that is absent...).
		if s, serr := readState(w.l); serr == nil {
			w.believed = map[int]uint32{}
			for i := range w.servers {
				var wt uint32
				if _, err := fmt.Sscanf(s.State[serverKey(lab.ServerID(i))], "w%d", &wt); err == nil {
					w.believed[i] = wt
				}
			}
		}
	}
	w.mu.Lock()
	w.requests = append(w.requests, r)
	w.mu.Unlock()
}

// unknownOutcome: ctl said so ("outcome unknown": the call broke after the
// change was sent, mgmtapi.ErrOutcomeUnknown), gave up waiting, or lost the call on the way, or
// a controller took the request and had not finished it ("request not
// finished": the next elected controller runs it again): the request may
// have been applied. "no controller answered" is a failure: the request
// was withdrawn from the store (pkg/controlplane/controller.Submit) and
// must never take effect; so is any refusal or validation error. The
// checker holds the controller to that.
func unknownOutcome(err error) bool {
	s := strings.ToLower(ctlMessage(err.Error()))
	if strings.Contains(s, "no controller answered") {
		return false
	}
	for _, m := range []string{"outcome unknown", "request not finished", "deadline", "timeout", "timed out", "unavailable", "eof", "connection reset", "rst_stream", "canceled", "cancelled"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// ctlMessage is what ctl printed, without the command line
// netlab.Namespace.Run puts before it.
func ctlMessage(s string) string {
	if i := strings.LastIndex(s, "exit status "); i >= 0 {
		if j := strings.Index(s[i:], ": "); j >= 0 {
			return strings.TrimSpace(s[i+j+2:])
		}
	}
	return s
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

func (w *workload) history() []history.Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]history.Request(nil), w.requests...)
}
