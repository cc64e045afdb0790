// Package ring stores and reads the "mux ring" of a load-balancer instance
// (Beamer §4.5, Fig. 10–11): the forwarding state muxes load, as a chain
// of generations in the control store.
//
// Each generation N holds a delta (the forwarding.Delta turning generation
// N-1 into N) and optionally a blob (the whole forwarding.Table at N). Two
// pointers say what is current: latest-gen (the newest complete
// generation) and latest-blob (the newest generation with a blob), each as
// GENERATION@INCARNATION. A mux starts from the latest blob and applies
// the deltas after it in order; then it watches latest-gen.
//
// An incarnation (Pair) begins with a full blob declared as a resync, at a
// generation above all earlier ones; every newly elected controller and
// every repair (Repair) begins one, so a (incarnation, generation) pair is
// never published twice with different content, and a mux never goes to a
// lower pair nor enters another incarnation except by loading a whole blob.
// Incarnations are 32-bit Unix seconds bounded by the clock, never wrapped
// (incarnation.go; docs/control-plane.md, "Incarnation rules").
//
// Deltas and blobs are "objects": a 36-byte header (magic, format version,
// kind, codec, resync flag, incarnation, generation, chunk count, lengths,
// CRC32C of the payload and of the header itself) followed by the
// zlib-compressed payload, split into chunk keys no larger than the store's
// value limit. A reader checks the header, then every size it claims
// against the instance's and the store's bounds before allocating, the
// chunk count, every length and the checksum before it decompresses
// (bounded), and decodes into fresh memory; a corrupt object is an error
// and nothing of it reaches the caller's table.
//
// Writer is the controller's side: it publishes a generation by writing
// all its chunks first and moving latest-gen (and latest-blob) last, in one
// atomic commit, and deletes generations older than the latest blob.
// Follower is the mux's side. The byte layout is in docs/control-plane.md.
//
// A strategy that keeps state of its own in the table (forwarding.Table
// beside buckets and servers) carries it in a section at the end of the
// payloads, registered from its folder through ringspi at a fixed
// position; a binary that writes or reads payloads builds every strategy
// in (pkg/strategy/all), or it refuses what it cannot read whole.
package ring
