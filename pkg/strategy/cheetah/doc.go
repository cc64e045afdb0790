// Package cheetah is the Cheetah strategy's own code on the Go side: its
// controller side (Beamer's buckets plus the keys: pushed to the agents
// with their loads read back, switched and rotated, carried in the table;
// ctlstrategy), its mux loader side (the instance's record of keys, policy
// and picks, muxspi) and its reference-model decision (modelspi), all
// registered in init(); its cookie is cookie.
package cheetah
