// Package netlab builds small networks of Linux network namespaces joined by
// veth pairs, for the data-path tests and the lab. Every namespace it makes is
// named with a per-run prefix and removed by Close, which also sweeps
// namespaces left behind by runs whose process is gone.
//
// Addresses used with it must come from 198.18.0.0/15, the range reserved for
// network benchmarking, or 2001:db8::/32, IPv6's documentation range
// (AddAddr refuses others), and traffic stays inside the namespaces it made.
package netlab
