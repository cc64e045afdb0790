package mgmtapi

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

// What one caller may cost the controller.
const (
	maxConns          = 64      // connections at once (netutil.LimitListener)
	maxStreams        = 16      // concurrent calls per connection
	maxRecvBytes      = 4 << 20 // a request (CreateInstance's config is the largest)
	callsPerSecond    = 20      // per source address, sustained
	callBurst         = 40      // per source address, at once
	maxRateSources    = 4096    // limiters kept; beyond that the table starts over
	keepaliveMinTime  = 10 * time.Second
	maxConnectionIdle = 10 * time.Minute
)

// sourceLimits is a token bucket per source address.
type sourceLimits struct {
	mu sync.Mutex
	by map[string]*rate.Limiter
}

func (l *sourceLimits) allow(ctx context.Context) error {
	src := sourceOf(ctx)
	l.mu.Lock()
	if l.by == nil || len(l.by) >= maxRateSources {
		l.by = map[string]*rate.Limiter{}
	}
	lim, ok := l.by[src]
	if !ok {
		lim = rate.NewLimiter(callsPerSecond, callBurst)
		l.by[src] = lim
	}
	l.mu.Unlock()
	if !lim.Allow() {
		return status.Errorf(codes.ResourceExhausted, "more than %d calls per second from %s", callsPerSecond, src)
	}
	return nil
}

func (l *sourceLimits) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := l.allow(ctx); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (l *sourceLimits) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := l.allow(ss.Context()); err != nil {
		return err
	}
	return h(srv, ss)
}

// serverOptions bound a caller: streams, message size, keep-alive pings
// (a client pinging more often than every 10 s is disconnected), idle
// connections, the per-source rate; then authenticate and authorize.
func serverOptions(l *sourceLimits) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxConcurrentStreams(maxStreams),
		grpc.MaxRecvMsgSize(maxRecvBytes),
		grpc.ConnectionTimeout(10 * time.Second),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveMinTime, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: maxConnectionIdle, Time: time.Minute, Timeout: 20 * time.Second}),
		grpc.ChainUnaryInterceptor(l.unary, authUnary),
		grpc.ChainStreamInterceptor(l.stream, authStream),
	}
}
