package httpserver

import (
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// sourceIdle is how long a source's limiter is kept after its last request.
const sourceIdle = time.Minute

// SourceLimiter bounds the request rate of each source address. Its table
// holds at most max sources: when it is full, idle sources are pruned, and
// if none is idle, new sources share one overflow limiter (a flood from
// many addresses then slows itself, not the sources already known). The
// HTTP servers here use it per request, the management API (pkg/controlplane/mgmtapi)
// per gRPC call.
type SourceLimiter struct {
	limit rate.Limit
	burst int
	max   int

	mu       sync.Mutex
	sources  map[netip.Addr]*sourceState
	overflow *rate.Limiter
	pruned   time.Time
}

type sourceState struct {
	lim  *rate.Limiter
	last time.Time
}

// NewSourceLimiter allows each source l requests per second (burst) and
// tracks at most max sources.
func NewSourceLimiter(l rate.Limit, burst, max int) *SourceLimiter {
	return &SourceLimiter{limit: l, burst: burst, max: max, sources: map[netip.Addr]*sourceState{},
		overflow: rate.NewLimiter(l, burst)}
}

// Allow takes one request of src from its budget now.
func (s *SourceLimiter) Allow(src netip.Addr) bool { return s.allow(src, time.Now()) }

// allow takes one request of src from its budget.
func (s *SourceLimiter) allow(src netip.Addr, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.sources[src]
	if st == nil {
		if len(s.sources) >= s.max || now.Sub(s.pruned) > sourceIdle {
			s.prune(now)
		}
		if len(s.sources) >= s.max {
			return s.overflow.AllowN(now, 1)
		}
		st = &sourceState{lim: rate.NewLimiter(s.limit, s.burst)}
		s.sources[src] = st
	}
	st.last = now
	return st.lim.AllowN(now, 1)
}

func (s *SourceLimiter) prune(now time.Time) {
	s.pruned = now
	for a, st := range s.sources {
		if now.Sub(st.last) > sourceIdle {
			delete(s.sources, a)
		}
	}
}

func (s *SourceLimiter) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sources)
}

// wrap answers 429 to a source over its rate, except on exempt paths, and
// caps every request body.
func (s *SourceLimiter) wrap(h http.Handler, exempt []string, maxBody int64, onLimited func()) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !slices.Contains(exempt, r.URL.Path) {
			src := netip.Addr{}
			if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
				src = ap.Addr().Unmap()
			}
			if !s.allow(src, time.Now()) {
				if onLimited != nil {
					onLimited()
				}
				w.Header().Set("Retry-After", "1")
				http.Error(w, "too many requests from this address", http.StatusTooManyRequests)
				return
			}
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		}
		h.ServeHTTP(w, r)
	})
}
