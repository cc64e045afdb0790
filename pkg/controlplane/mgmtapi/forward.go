package mgmtapi

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi/mgmtv1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// A standby controller forwards every call (after checking the caller's
// role itself) to the elected controller, naming the verified role in
// the call's metadata; a call that was forwarded already is not
// forwarded again (Unavailable, naming the elected controller).

// target is where a call runs: nil conn means here. While no controller
// is elected (one is starting, or the store was away) a read is answered
// here from the store, as the elected controller would answer it; a
// change waits for one (Unavailable: the client retries).
func (s *Server) target(ctx context.Context, method string) (*grpc.ClientConn, context.Context, error) {
	self, name, addr, err := s.b.Leader(ctx)
	if errors.Is(err, errNoLeader) && readMethods[method] {
		return nil, ctx, nil
	}
	if err != nil {
		return nil, nil, status.Errorf(codes.Unavailable, "this controller is not elected and cannot reach the elected one: %v", err)
	}
	if self {
		return nil, ctx, nil
	}
	ci := infoOf(ctx)
	if ci.forwarded {
		return nil, nil, status.Errorf(codes.Unavailable, "not the elected controller: %q is (at %s)", name, addr)
	}
	conn, err := s.leaderConn(addr)
	if err != nil {
		return nil, nil, status.Errorf(codes.Unavailable, "not the elected controller (%q is): %v", name, err)
	}
	return conn, metadata.AppendToOutgoingContext(ctx, forwardedRoleKey, string(ci.role)), nil
}

// messageOf is a new message of the input or output type of method.
func messageOf(method string, output bool) (proto.Message, error) {
	short := method[strings.LastIndex(method, "/")+1:]
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(mgmtv1.Management_ServiceDesc.ServiceName))
	if err != nil {
		return nil, err
	}
	m := d.(protoreflect.ServiceDescriptor).Methods().ByName(protoreflect.Name(short))
	if m == nil {
		return nil, status.Errorf(codes.Unimplemented, "no method %s", method)
	}
	md := m.Input()
	if output {
		md = m.Output()
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName())
	if err != nil {
		return nil, err
	}
	return mt.New().Interface(), nil
}

func (s *Server) forwardUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	conn, octx, err := s.target(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	if conn == nil {
		return h(ctx, req)
	}
	reply, err := messageOf(info.FullMethod, true)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := conn.Invoke(octx, info.FullMethod, req, reply); err != nil {
		return nil, err
	}
	return reply, nil
}

func (s *Server) forwardStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	conn, octx, err := s.target(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	if conn == nil {
		return h(srv, ss)
	}
	req, err := messageOf(info.FullMethod, false)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	if err := ss.RecvMsg(req); err != nil {
		return err
	}
	cs, err := conn.NewStream(octx, &grpc.StreamDesc{ServerStreams: true}, info.FullMethod)
	if err != nil {
		return err
	}
	if err := cs.SendMsg(req); err != nil {
		return err
	}
	if err := cs.CloseSend(); err != nil {
		return err
	}
	for {
		m, err := messageOf(info.FullMethod, true)
		if err != nil {
			return status.Error(codes.Internal, err.Error())
		}
		if err := cs.RecvMsg(m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if err := ss.SendMsg(m); err != nil {
			return err
		}
	}
}
