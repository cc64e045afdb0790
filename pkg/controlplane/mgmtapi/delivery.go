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

// preferFirst is how long a connection still connecting keeps its place
// before the addresses after it: the order given is kept when every
// controller answers, and a host that does not answer costs this much.
const preferFirst = 300 * time.Millisecond

// nextReady is the first address, in the order given and not yet tried,
// whose connection is connected, waiting within connectLimit and ctx
// while some are still connecting; -1 when none connected. Every address
// is dialled at once, and one still connecting after preferFirst yields
// to a later one that is connected: a cut controller host (its SYNs
// vanish, the dial hangs) listed first no longer holds every ctl command
// for connectLimit (issue 26). A call is made only on a connected
// connection: one made on a connection still connecting may connect and
// send, so its failure would not tell whether a change arrived.
func (c *Client) nextReady(ctx context.Context, tried []bool) int {
	ctx, cancel := context.WithTimeout(ctx, connectLimit)
	defer cancel()
	start := time.Now()
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	for {
		connecting := false
		for i, conn := range c.conns {
			if tried[i] {
				continue
			}
			s := conn.GetState()
			if s == connectivity.Ready {
				return i
			}
			if s == connectivity.Idle {
				conn.Connect()
				s = connectivity.Connecting
			}
			if s == connectivity.Connecting {
				if !connecting && time.Since(start) < preferFirst {
					connecting = true
					for _, later := range c.conns[i+1:] {
						if later.GetState() == connectivity.Idle {
							later.Connect() // dialled now, in case it is needed
						}
					}
					break
				}
				connecting = true
			}
		}
		if !connecting {
			return -1
		}
		select {
		case <-ctx.Done():
			return -1
		case <-poll.C:
		}
	}
}

// ready waits (within connectLimit and ctx) until conn is connected, or
// has failed to connect: a standby forwards a change to the elected
// controller only on a connected conn, for the reason nextReady gives.
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
