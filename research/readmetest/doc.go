// Package readmetest proves the README's "Running it" section: its command
// blocks are the script of TestReadmeMultiHost, which builds the network
// the section describes in network namespaces (one per host) and runs every
// block, as written, in a shell of the host the block names.
package readmetest
