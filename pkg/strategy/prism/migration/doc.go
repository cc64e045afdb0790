// Package migration holds the Prism strategy's algorithms (Cohen et al., "LB
// Scalability: Achieving the Right Balance Between Being Stateful and
// Stateless"): Algorithm 1, iterative migration of a pool update's
// signatures into the migrated-connection table (MCT) in rounds; Algorithm
// 2, the choice of the bins to move by least expected MCT load; and the
// software connection table (SCT) they read. The controller runs them on
// real agents' answers (pkg/strategy/prism/migrate.go); the simulation
// (sim.go, `beamer-lab sim prism`) runs the same code on a synthetic workload.
package migration
