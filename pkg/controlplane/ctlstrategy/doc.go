// Package ctlstrategy is the controller's strategy interface: what the
// controller asks of an instance's forwarding strategy, and the registry a
// strategy's own package (pkg/strategy/NAME) adds itself to in init().
//
// It is small on purpose and imports no layer: a strategy package imports
// it, never pkg/controlplane/controller, so the controller's own tests can
// load every strategy (pkg/strategy/all) without an import cycle.
package ctlstrategy
