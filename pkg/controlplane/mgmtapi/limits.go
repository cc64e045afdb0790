package mgmtapi

import (
	"context"
	"time"

	"github.com/beamer-lb/beamer/pkg/httpserver"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

// What one caller may cost the controller.
const (
	maxStreams        = 16      // concurrent calls per connection
	maxRecvBytes      = 4 << 20 // a request (CreateInstance's config is the largest)
	keepaliveMinTime  = 10 * time.Second
	maxConnectionIdle = 10 * time.Minute
)

// connLimits are the API's connection budgets and per-source call rate,
// kept by pkg/httpserver's listener and limiter as for every node API:
// 64 connections at once (48 from remote sources, 16 from loopback), 16
// from one address; 20 calls per second per address (burst 40), 4,096
// addresses tracked, idle ones forgotten (beyond that new ones share one
// budget).
var connLimits = httpserver.Limits{
	MaxConns: 48, LocalConns: 16, PerSourceConns: 16,
	PerSourceRate: 20, PerSourceBurst: 40, MaxSources: 4096,
}

// sourceLimits is the per-source call rate of connLimits.
type sourceLimits struct{ *httpserver.SourceLimiter }

func newSourceLimits() *sourceLimits {
	return &sourceLimits{httpserver.NewSourceLimiter(connLimits.PerSourceRate, connLimits.PerSourceBurst, connLimits.MaxSources)}
}

func (l *sourceLimits) allow(ctx context.Context) error {
	src := sourceOf(ctx)
	if !l.Allow(src) {
		return status.Errorf(codes.ResourceExhausted, "more than %v calls per second from %v", connLimits.PerSourceRate, src)
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
