// Package all builds every strategy into a binary: each strategy's package
// registers itself into the layers' strategy interfaces in init(). The
// commands (cmd/internal/beamercli, cmd/beamer-lab) and the tests that run
// real strategies import it; a new strategy adds one line here.
package all

import (
	_ "github.com/beamer-lb/beamer/pkg/strategy/awfd"
	_ "github.com/beamer-lb/beamer/pkg/strategy/beamer"
	_ "github.com/beamer-lb/beamer/pkg/strategy/cheetah"
	_ "github.com/beamer-lb/beamer/pkg/strategy/maglev"
	_ "github.com/beamer-lb/beamer/pkg/strategy/prism"
)
