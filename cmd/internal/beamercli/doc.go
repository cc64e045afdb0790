// Package beamercli is the command tree of the product binary, cmd/beamer:
// the mux daemon, the server agent, the controller, ctl and the operator's
// tools, each built by a constructor (newMuxCommand, newCtlCommand, …) that
// the root's constructor calls.
//
// It is a package rather than cmd/beamer's main so that beamer-lab can run
// the product's own mux command with an experiment's fault around its store
// (NewMuxCommand with MuxHooks): the fault stays in the research wing and
// the product binary never carries it.
package beamercli
