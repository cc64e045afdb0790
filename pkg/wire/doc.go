// Package wire is the Go side of the Beamer wire format (docs/wire-format.md):
// the flow hash and bucket choice, the 16-byte IP option, and the IP-in-IP
// encapsulation the mux writes and the agent reads. The C data plane in bpf/
// implements the same format; both are checked against the shared vectors in
// testdata/.
package wire
