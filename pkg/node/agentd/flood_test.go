package agentd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/metrics"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/prometheus/client_golang/prometheus"
)

// floodChildEnv makes the test binary the flooded node: the agent API
// (with the agent's mismatch logger) and a --metrics address, in a
// process of its own, so its memory, descriptors and log are measured
// apart from the flooding test.
const floodChildEnv = "BEAMER_TEST_FLOOD_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(floodChildEnv) != "" {
		floodChild()
		return
	}
	os.Exit(m.Run())
}

func floodChild() {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))
	vip := netip.MustParseAddr("198.18.100.1")
	api, err := agentapi.Serve("127.0.0.1:0", agentapi.Options{VIPs: []netip.Addr{vip},
		Params: map[netip.Addr]agentapi.VIPParams{vip: {Buckets: 100}}, OnMismatch: mismatchLogger()})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	m, err := metrics.Serve("127.0.0.1:0", prometheus.NewRegistry(), func() error { return nil })
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(api.Addr(), m.Addr())
	io.Copy(io.Discard, os.Stdin) // until the test closes stdin
}

// Bounds the flooded node stays under (the figures measured are logged).
const (
	floodMaxFDs      = 300
	floodMaxRSSBytes = 64 << 20
	floodMaxLogBytes = 64 << 10
	floodHealthzMax  = time.Second
)

// A node's API and its --metrics address flooded with idle connections
// (one request each, then silence) and with health probes that each ask a
// different bucket count (a different mismatch reason, so a different log
// line): the node keeps its descriptors, memory and log bounded and
// answers /healthz within a second throughout. The flood comes from
// 127.0.0.2 and 127.0.0.3 (other sources, as an attacker's host would be),
// /healthz is asked from 127.0.0.1.
func TestAPIAndMetricsUnderFlood(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), floodChildEnv+"=1")
	logPath := filepath.Join(t.TempDir(), "node.log")
	logFile, err := os.Create(logPath)
	must(t, err)
	defer logFile.Close()
	cmd.Stderr = logFile
	stdin, err := cmd.StdinPipe()
	must(t, err)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	defer func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	must(t, err)
	f := strings.Fields(line)
	if len(f) != 2 {
		t.Fatalf("child: %q", line)
	}
	apiAddr, metricsAddr := f[0], f[1]
	pid := cmd.Process.Pid

	healthz := func() time.Duration {
		start := time.Now()
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get("http://" + metricsAddr + "/healthz")
		if err != nil {
			t.Errorf("/healthz under flood: %v", err)
			return time.Since(start)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("/healthz under flood: %s", resp.Status)
		}
		return time.Since(start)
	}
	measure := func(what string) (fds int, rss int64, logBytes int64) {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		must(t, err)
		fds = len(ents)
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		must(t, err)
		for _, l := range strings.Split(string(st), "\n") {
			if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				rss = kb << 10
			}
		}
		fi, err := os.Stat(logPath)
		must(t, err)
		logBytes = fi.Size()
		t.Logf("%s: node fds %d, RSS %.1f MB, log %d bytes", what, fds, float64(rss)/(1<<20), logBytes)
		if fds > floodMaxFDs || rss > floodMaxRSSBytes || logBytes > floodMaxLogBytes {
			t.Errorf("%s: fds %d (max %d), RSS %d (max %d), log %d bytes (max %d)", what, fds, floodMaxFDs, rss, floodMaxRSSBytes, logBytes, floodMaxLogBytes)
		}
		return
	}
	// healthzWatch asks /healthz every 100 ms until stop, keeping the worst.
	healthzWatch := func(stop <-chan struct{}) func() time.Duration {
		var worst atomic.Int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				if d := healthz(); int64(d) > worst.Load() {
					worst.Store(int64(d))
				}
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
		return func() time.Duration { <-done; return time.Duration(worst.Load()) }
	}
	measure("before")

	// Idle flood: 2,000 connections to each address, one request each,
	// then silence, from 127.0.0.2, 32 dials at a time, within 60 s.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const idlePerAddr = 2000
	var mu sync.Mutex
	var held []net.Conn
	var accepted, refused atomic.Int64
	dialer := &net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	jobs := make(chan string)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for addr := range jobs {
				c, err := dialer.DialContext(ctx, "tcp", addr)
				if err != nil {
					refused.Add(1)
					continue
				}
				path := "/v1/capacity"
				if addr == metricsAddr {
					path = "/healthz"
				}
				if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: node\r\n\r\n", path); err != nil {
					refused.Add(1)
					c.Close()
					continue
				}
				accepted.Add(1)
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
			}
		}()
	}
	stop := make(chan struct{})
	worst := healthzWatch(stop)
	start := time.Now()
	for i := range 2 * idlePerAddr {
		addr := apiAddr
		if i%2 == 1 {
			addr = metricsAddr
		}
		select {
		case jobs <- addr:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	t.Logf("idle flood: %d connections opened and written to, %d refused at once, in %v", accepted.Load(), refused.Load(), time.Since(start).Round(time.Millisecond))
	time.Sleep(500 * time.Millisecond)
	// The controller (another source) is still answered by the API.
	cstart := time.Now()
	ctlClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.4")}}).DialContext}}
	if resp, err := ctlClient.Get("http://" + apiAddr + agentapi.HealthPath + "?vip=198.18.100.1&port=80&buckets=100&timeout_ms=100"); err != nil {
		t.Errorf("the controller's probe under the idle flood: %v", err)
	} else {
		resp.Body.Close()
		t.Logf("idle flood: the controller's probe answered %s in %v", resp.Status, time.Since(cstart).Round(time.Microsecond))
	}
	measure("idle flood, connections held")
	close(stop)
	if w := worst(); w > floodHealthzMax {
		t.Errorf("/healthz took %v under the idle flood (max %v)", w, floodHealthzMax)
	} else {
		t.Logf("idle flood: worst /healthz %v", w.Round(time.Microsecond))
	}
	for _, c := range held {
		c.Close()
	}

	// Distinct-query flood: health probes asking a different bucket count
	// each (each a different mismatch reason), 8 keep-alive connections
	// from 127.0.0.3, 20,000 requests or 20 s.
	const queries = 20000
	var next, codes200, codes429, other atomic.Int64
	stop = make(chan struct{})
	worst = healthzWatch(stop)
	qctx, qcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer qcancel()
	tr := &http.Transport{MaxIdleConnsPerHost: 8, DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}}).DialContext}
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	start = time.Now()
	var qwg sync.WaitGroup
	for range 8 {
		qwg.Add(1)
		go func() {
			defer qwg.Done()
			for qctx.Err() == nil {
				i := next.Add(1)
				if i > queries {
					return
				}
				resp, err := client.Get(fmt.Sprintf("http://%s%s?vip=198.18.100.1&port=80&buckets=%d&window_s=%d", apiAddr, agentapi.HealthPath, 1000+i, i))
				if err != nil {
					other.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case 200:
					codes200.Add(1)
				case 429:
					codes429.Add(1)
				default:
					other.Add(1)
				}
			}
		}()
	}
	qwg.Wait()
	tr.CloseIdleConnections()
	close(stop)
	t.Logf("distinct-query flood: %d answered (mismatch), %d refused 429, %d other, in %v", codes200.Load(), codes429.Load(), other.Load(), time.Since(start).Round(time.Millisecond))
	if codes200.Load() == 0 {
		t.Error("no probe answered: the flood did not reach the mismatch path")
	}
	if w := worst(); w > floodHealthzMax {
		t.Errorf("/healthz took %v under the query flood (max %v)", w, floodHealthzMax)
	} else {
		t.Logf("query flood: worst /healthz %v", w.Round(time.Microsecond))
	}
	_, _, logBytes := measure("distinct-query flood")
	b, _ := os.ReadFile(logPath)
	if n := strings.Count(string(b), "differs from this agent's configuration"); n < 1 || n > 3 {
		t.Errorf("%d mismatch lines in the node's log, want 1–3 (one a minute, with the count suppressed)", n)
	}
	_ = logBytes
}
