package scalebench

// Every strategy is built in: the package runs the layers in its own
// process, and each strategy registers itself into their strategy
// interfaces from its own package.
import _ "github.com/beamer-lb/beamer/pkg/strategy/all"
