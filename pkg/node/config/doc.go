// Package config reads the static configuration files of `beamer mux` and
// `beamer agent`: YAML (a superset of JSON), unknown keys rejected, every
// error naming the file and what is wrong. With them a mux and its servers
// run before any control store exists; with a store the mux takes its
// instances from there instead (docs/control-plane.md).
package config
