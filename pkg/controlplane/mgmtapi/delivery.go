package mgmtapi

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// A change is not idempotent: sent twice, it may run twice (a controller
// killed after running a request but before reporting it leaves the
// request in the store, and its successor runs it again). So a change is
// sent to another controller only when the one before certainly did not
// get it; when it may have (the connection broke during the call), the
// caller is told the outcome is unknown rather than failed (issue 26: the
// partition rig's checker found a change reported failed that had been
// made).

// ErrOutcomeUnknown: the change may or may not have been made; check with
// `beamer ctl show` (or list) before sending it again.
var ErrOutcomeUnknown = errors.New("outcome unknown")

// notSubmittedKey is the trailer with which a controller says it refused a
// change before submitting it anywhere (it is not elected and cannot
// reach the one that is): the caller may send it elsewhere.
const notSubmittedKey = "beamer-not-submitted"

// refuseUnsubmitted marks an Unavailable refusal of a call as made before
// the change went anywhere.
func refuseUnsubmitted(ctx context.Context, err error) error {
	if status.Code(err) == codes.Unavailable {
		grpc.SetTrailer(ctx, metadata.Pairs(notSubmittedKey, "1"))
	}
	return err
}

// notSubmitted tells whether a call's trailer says the change was refused
// before it was submitted.
func notSubmitted(trailer metadata.MD) bool { return len(trailer.Get(notSubmittedKey)) > 0 }

// connectLimit bounds the wait for a connection before a change is sent
// on it.
const connectLimit = 5 * time.Second

// ready waits (within connectLimit and ctx) until conn is connected, or
// has failed to connect. A change is sent only on a connected conn: a
// call on one that is not yet connected may connect and send, so its
// failure would not tell whether the change arrived.
func ready(ctx context.Context, conn *grpc.ClientConn) bool {
	ctx, cancel := context.WithTimeout(ctx, connectLimit)
	defer cancel()
	for {
		s := conn.GetState()
		switch s {
		case connectivity.Ready:
			return true
		case connectivity.TransientFailure, connectivity.Shutdown:
			return false
		case connectivity.Idle:
			conn.Connect()
		}
		if !conn.WaitForStateChange(ctx, s) {
			return false
		}
	}
}
