// Package cheetah is the Cheetah strategy's own code on the Go side: its
// controller side (key push and loads, held servers, key rotation;
// ctlstrategy), its mux loader side (the instance's record of keys, policy
// and picks, muxspi), its reference-model decision (modelspi) and its
// section of the ring's payloads (keys and loads, ringspi), registered in
// init(); its cookie is cookie. Its agent side is still files of that
// layer (docs/architecture.md, "A new strategy").
package cheetah
