package mgmtapi

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi/mgmtv1"
	"github.com/beamer-lb/beamer/pkg/httpserver"
	"github.com/beamer-lb/beamer/pkg/node/nodeauth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// readMethods are the RPCs the read role may call; every other RPC of the
// service changes state and needs admin.
var readMethods = map[string]bool{
	mgmtv1.Management_ListInstances_FullMethodName: true,
	mgmtv1.Management_ShowInstance_FullMethodName:  true,
	mgmtv1.Management_Lookup_FullMethodName:        true,
	mgmtv1.Management_Watch_FullMethodName:         true,
}

// forwardedRoleKey is the metadata a standby controller adds when it
// forwards a call to the elected one: the role it verified in the
// caller's certificate. Only a controller certificate may assert it.
const forwardedRoleKey = "beamer-forwarded-role"

type roleKey struct{}

// callerRole is the role a call runs with. A plaintext call (no TLS) is
// admin: the API is served in plaintext only on loopback or with
// --insecure (nodeauth.CheckPlaintext).
func callerRole(ctx context.Context) (role nodeauth.Role, forwarded bool, err error) {
	md, _ := metadata.FromIncomingContext(ctx)
	fwd := md.Get(forwardedRoleKey)
	p, ok := peer.FromContext(ctx)
	if !ok {
		return "", false, status.Error(codes.Unauthenticated, "no peer")
	}
	info, isTLS := p.AuthInfo.(credentials.TLSInfo)
	if !isTLS {
		if len(fwd) == 1 {
			return nodeauth.Role(fwd[0]), true, nil
		}
		return nodeauth.RoleAdmin, false, nil
	}
	chains := info.State.VerifiedChains
	if len(chains) == 0 || len(chains[0]) == 0 {
		return "", false, status.Error(codes.Unauthenticated, "no verified client certificate")
	}
	role, err = nodeauth.RoleOf(chains[0][0])
	if err != nil {
		return "", false, status.Error(codes.PermissionDenied, err.Error())
	}
	if role == nodeauth.RoleController && len(fwd) == 1 {
		return nodeauth.Role(fwd[0]), true, nil
	}
	return role, false, nil
}

// allowed says whether role may call method.
func allowed(role nodeauth.Role, method string) bool {
	switch role {
	case nodeauth.RoleAdmin:
		return true
	case nodeauth.RoleRead:
		return readMethods[method]
	}
	return false
}

func authorize(ctx context.Context, method string) (context.Context, error) {
	role, fwd, err := callerRole(ctx)
	if err != nil {
		return nil, err
	}
	if !allowed(role, method) {
		return nil, status.Errorf(codes.PermissionDenied, "role %q may not call %s (read: ListInstances, ShowInstance, Lookup, Watch; admin: every call)",
			role, strings.TrimPrefix(method, "/"+mgmtv1.Management_ServiceDesc.ServiceName+"/"))
	}
	return context.WithValue(ctx, roleKey{}, callInfo{role: role, forwarded: fwd}), nil
}

type callInfo struct {
	role      nodeauth.Role
	forwarded bool
}

func infoOf(ctx context.Context) callInfo {
	ci, _ := ctx.Value(roleKey{}).(callInfo)
	return ci
}

func authUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	ctx, err := authorize(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func authStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	ctx, err := authorize(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	return h(srv, &ctxStream{ServerStream: ss, ctx: ctx})
}

type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *ctxStream) Context() context.Context { return s.ctx }

// sourceOf is the caller's address, the key of its rate limit.
func sourceOf(ctx context.Context) netip.Addr {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return netip.Addr{}
	}
	return httpserver.SourceOf(p.Addr)
}

func errorf(c codes.Code, format string, a ...any) error {
	return status.Error(c, fmt.Sprintf(format, a...))
}
