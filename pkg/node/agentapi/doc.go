// Package agentapi is the HTTP API a server agent serves to the controller
// (`beamer agent --api ADDR`, default :9300). Servers never write to the
// control store; the controller asks them instead:
//
//   - GET /v1/health?vip=V&port=P: the agent connects to V:P from the
//     server itself. The VIP is on the server's loopback, so a service bound
//     only to the VIP (the usual direct-server-return setup) answers, which a
//     probe from the controller to DIP:P cannot reach.
//
//   - GET /v1/connections?vip=V&buckets=B: per bucket of a table of B
//     buckets, how many TCP connections of the VIP this server holds, read
//     from the kernel's socket table (netlink sock_diag). The controller
//     keeps this server in the history of buckets it lost while it still
//     holds connections there.
//
//   - PUT /v1/cheetah: the controller pushes a Cheetah instance's cookie
//     keys; the agent answers with its live connections to the VIP (the
//     load p2c compares). Only callers in the controllers' prefixes may
//     push, only for the agent's Cheetah VIPs, and the keys are never
//     answered back. The messages and the client are here (cheetah.go);
//     the agent's handler is Cheetah's own route
//     (pkg/strategy/cheetah/agent_api.go), mounted from Options.Routes
//     (routes.go: what every strategy's route is given).
//
// Every endpoint is the controller's: with Options.TLS the API is mutual
// TLS and answers a certificate of the controller role only (pkg/node/nodeauth);
// it runs in a bounded server (pkg/httpserver: timeouts, connection and
// request budgets per source). Apart from the push the API only reads and
// probes. Probes
// go only to the agent's own VIPs, and their number in flight is bounded, so
// a caller cannot use the agent to reach other hosts or open unbounded
// connections.
package agentapi
