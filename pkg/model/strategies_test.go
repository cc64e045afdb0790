package model

// The tests run real strategies: each registers itself into the layers'
// strategy interfaces from its own package.
import _ "github.com/beamer-lb/beamer/pkg/strategy/all"
