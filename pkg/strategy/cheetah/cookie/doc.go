// Package cookie is the Go model of the Cheetah cookie (docs/strategy-cheetah.md):
// how a server id is obfuscated per connection, where it sits in the server's
// TCP timestamp, how the mux reads it back from the client's echo and what the
// server's stack is shown instead of the echo. bpf/include/cheetah_cookie.h is
// the C side; both are checked against testdata/cheetah-vectors.json.
package cookie
