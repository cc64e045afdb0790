// Package netlab builds small networks of Linux network namespaces joined by
// veth pairs, for the data-path tests and the lab. Every namespace it makes is
// named with a per-run prefix (the owning process's pid and start time) and
// removed by Close; New sweeps namespaces left behind by runs whose process
// is gone. Namespaces are created as iproute2 creates them, in a /run/netns
// that is a shared mount point of its own, so that an `ip netns add` on the
// same host cannot hide them (see ensureRunDir).
//
// Addresses used with it must come from 198.18.0.0/15, the range reserved for
// network benchmarking, or 2001:db8::/32, IPv6's documentation range
// (AddAddr refuses others), and traffic stays inside the namespaces it made.
package netlab
