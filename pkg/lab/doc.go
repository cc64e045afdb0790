// Package lab builds a small datacenter in network namespaces on one machine
// and runs load-balancing scenarios through it with real kernels, real TCP
// and HTTP: clients, a layer-2 fabric, muxes running `beamer mux`, servers
// running `beamer agent` and an HTTP file server, and `beamer controller`
// with its embedded etcd store. It counts what clients see: connections
// that broke.
//
// Every namespace and process the lab starts is removed when it closes, also
// after a failure or an interrupt.
package lab
