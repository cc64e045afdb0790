package lab

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The AWFD experiment's workload (Spotlight §V-B): clients open one new
// connection per download at Poisson times, each asking a heavy-tailed
// (Pareto) number of bytes, open loop — arrivals do not wait for earlier
// downloads, so a load balancer that piles work on a slow server pays in
// completion time and in bytes not delivered before the end.

// FlowOptions shape the open-loop download workload.
type FlowOptions struct {
	Rate     float64       // new downloads per second, all clients together
	Duration time.Duration // arrivals stop after it
	MeanSize int           // mean download, bytes
	Alpha    float64       // Pareto shape (> 1)
	MaxSize  int           // cap on one download (≤ 64 MiB)
	Seed     int64
	Timeout  time.Duration // one download's limit (default 30 s)
	MaxOpen  int           // downloads in flight at most (default 2000): bounds the load
}

// FlowResult is what the clients measured.
type FlowResult struct {
	Started    int     `json:"started"`
	Completed  int     `json:"completed"`
	Failed     int     `json:"failed"`
	Skipped    int     `json:"skipped"` // arrivals dropped at MaxOpen
	Bytes      uint64  `json:"bytes"`   // received within the window
	Seconds    float64 `json:"seconds"`
	Throughput float64 `json:"throughput_mbps"` // Bytes over the arrival window
	MeanFCT    float64 `json:"mean_fct_ms"`
	P99FCT     float64 `json:"p99_fct_ms"`
	// P99FCTShort is the p99 FCT of the downloads of at most ShortFlow
	// bytes: with heavy-tailed sizes the overall p99 is set by the largest
	// transfers' own length, the short ones' by the queue they meet.
	P99FCTShort float64 `json:"p99_fct_short_ms"`
	// PerServer: completed downloads per server (X-Server).
	PerServer map[string]int `json:"per_server"`
	Errors    []string       `json:"errors,omitempty"` // first few
}

// ShortFlow is the largest download counted as short (P99FCTShort).
const ShortFlow = 100 << 10

// RunFlows plays the workload from every client namespace and waits for
// the downloads in flight (up to Timeout after the last arrival).
func (l *Lab) RunFlows(ctx context.Context, o FlowOptions) FlowResult {
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	if o.MaxOpen == 0 {
		o.MaxOpen = 2000
	}
	xm := float64(o.MeanSize) * (o.Alpha - 1) / o.Alpha
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0xa3fd))
	var (
		mu       sync.Mutex
		res      = FlowResult{PerServer: map[string]int{}}
		fcts     []float64
		short    []float64
		wg       sync.WaitGroup
		open     atomic.Int64
		received atomic.Uint64
	)
	start := time.Now()
	end := start.Add(o.Duration)
	clients := make([]*http.Client, len(l.clients))
	for i, ns := range l.clients {
		ns := ns
		src := clientAddr(0, i)
		clients[i] = &http.Client{Timeout: o.Timeout, Transport: &http.Transport{DisableKeepAlives: true,
			DialContext: func(ctx context.Context, network, addr string) (c net.Conn, err error) {
				err = ns.Do(func() error {
					d := net.Dialer{Timeout: o.Timeout, LocalAddr: &net.TCPAddr{IP: src.AsSlice()}}
					c, err = d.DialContext(ctx, "tcp4", addr)
					return err
				})
				return c, err
			}}}
	}
	url := "http://" + netip.AddrPortFrom(VIP, 80).String() + "/bytes?n="
	next := start
	for i := 0; ; i++ {
		next = next.Add(time.Duration(rng.ExpFloat64() / o.Rate * float64(time.Second)))
		if next.After(end) || ctx.Err() != nil {
			break
		}
		size := int(math.Min(xm/math.Pow(1-rng.Float64(), 1/o.Alpha), float64(o.MaxSize)))
		c := clients[i%len(clients)]
		time.Sleep(time.Until(next))
		if open.Load() >= int64(o.MaxOpen) {
			mu.Lock()
			res.Skipped++
			mu.Unlock()
			continue
		}
		open.Add(1)
		wg.Add(1)
		mu.Lock()
		res.Started++
		mu.Unlock()
		go func() {
			defer wg.Done()
			defer open.Add(-1)
			t0 := time.Now()
			server, n, err := fetch(ctx, c, fmt.Sprint(url, size), end, &received)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || n != size {
				res.Failed++
				if len(res.Errors) < 5 {
					res.Errors = append(res.Errors, fmt.Sprintf("%d of %d bytes: %v", n, size, err))
				}
				return
			}
			res.Completed++
			res.PerServer[server]++
			ms := float64(time.Since(t0)) / float64(time.Millisecond)
			fcts = append(fcts, ms)
			if size <= ShortFlow {
				short = append(short, ms)
			}
		}()
	}
	wg.Wait()
	res.Seconds = o.Duration.Seconds()
	res.Bytes = received.Load()
	res.Throughput = float64(res.Bytes) * 8 / res.Seconds / 1e6
	if len(fcts) > 0 {
		s := 0.0
		for _, f := range fcts {
			s += f
		}
		res.MeanFCT = s / float64(len(fcts))
		slices.Sort(fcts)
		res.P99FCT = fcts[len(fcts)*99/100]
	}
	if len(short) > 0 {
		slices.Sort(short)
		res.P99FCTShort = short[len(short)*99/100]
	}
	return res
}

// fetch downloads url; bytes received before end count toward received.
func fetch(ctx context.Context, c *http.Client, url string, end time.Time, received *atomic.Uint64) (string, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", 0, fmt.Errorf("%s", resp.Status)
	}
	buf := make([]byte, 32<<10)
	n := 0
	for {
		k, err := resp.Body.Read(buf)
		n += k
		if time.Now().Before(end) {
			received.Add(uint64(k))
		}
		if err == io.EOF {
			return resp.Header.Get("X-Server"), n, nil
		}
		if err != nil {
			return resp.Header.Get("X-Server"), n, err
		}
	}
}
