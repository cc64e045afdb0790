package all

import "github.com/beamer-lb/beamer/pkg/controlplane/ring/ringspi"

// Every strategy imported above has registered its ring payload sections
// by now (a package's init runs after its imports'): a missing position
// stops the binary here rather than at its first payload.
func init() {
	if _, err := ringspi.Sections(); err != nil {
		panic(err)
	}
}
