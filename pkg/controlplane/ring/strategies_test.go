package ring_test

// The tests run real strategies: each registers its payload sections
// (ringspi) from its own package. An external test package, as the
// strategies' packages may import this one; the package's own tests
// (package ring) run in the same binary, with every section registered.
import _ "github.com/beamer-lb/beamer/pkg/strategy/all"
