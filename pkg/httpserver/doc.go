// Package httpserver is the one constructor of every HTTP server a Beamer
// daemon runs (the agent API, the mux node API, every --metrics address).
// Each server it builds is bounded in what one caller can cost it:
//
//   - timeouts: reading the header (which also bounds a TLS handshake and
//     a connection that never sends a request), the whole request, writing
//     the answer, and an idle keep-alive connection;
//   - connections: at most Limits.MaxConns at once, at most
//     Limits.PerSourceConns from one source address, and a separate small
//     budget for loopback peers (a local health checker of /healthz keeps
//     its connections while remote sources fill theirs); a connection over
//     a budget is closed at once, unread;
//   - requests: at most Limits.PerSourceRate per second (burst
//     PerSourceBurst) from one source address, the rest answered 429
//     without work or a log line; the table of sources is bounded
//     (MaxSources) and pruned of sources idle for a minute;
//   - bodies and headers: at most MaxBodyBytes and MaxHeaderBytes;
//   - logs: the server's own error lines (TLS handshake failures, accept
//     errors) go through a LineLimiter, which prints a line at most once
//     per interval per kind and then says how many it suppressed.
//
// Exempt paths (e.g. /healthz) skip the per-source request rate: they cost
// nothing, and a flood must not make a node look dead.
//
// The connection budgets (LimitConns) and the per-source rate
// (SourceLimiter) also bound the controller's gRPC management API
// (pkg/controlplane/mgmtapi), whose server is grpc-go's.
package httpserver
