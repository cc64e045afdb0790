package beamercli

// Every strategy is built into the product's commands: each registers
// itself into the layers' strategy interfaces from its own package.
import _ "github.com/beamer-lb/beamer/pkg/strategy/all"
