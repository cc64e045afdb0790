package ring

import (
	"fmt"
	"strconv"

	"github.com/beamer-lb/beamer/pkg/store"
)

// Keys names the keys of one instance. Instance is the instance's root,
// ROOT/instances/NAME; everything of the instance lives below it.
type Keys struct {
	Instance string
}

// InstanceKeys returns the keys of instance name under the store root.
func InstanceKeys(root, name string) Keys {
	return Keys{Instance: store.Join(root, "instances", name)}
}

// InstancesKey is the parent of all instances under root.
func InstancesKey(root string) string { return store.Join(root, "instances") }

// Config is the instance configuration (JSON of forwarding.Instance).
func (k Keys) Config() string { return k.Instance + "/config" }

// Ring is the parent of the mux ring.
func (k Keys) Ring() string { return k.Instance + "/ring" }

// LatestGen holds the newest complete generation, GENERATION@INCARNATION.
func (k Keys) LatestGen() string { return k.Instance + "/ring/latest-gen" }

// LatestBlob holds the newest generation that has a blob, GENERATION@INCARNATION.
func (k Keys) LatestBlob() string { return k.Instance + "/ring/latest-blob" }

// Gens is the parent of the generation nodes.
func (k Keys) Gens() string { return k.Instance + "/ring/gen" }

// Gen is the node of generation g; the number is zero-padded to ten
// digits so that names sort like numbers.
func (k Keys) Gen(g uint32) string { return fmt.Sprintf("%s/ring/gen/%010d", k.Instance, g) }

// objectDir is where the chunks of generation g's delta or blob live.
func (k Keys) objectDir(g uint32, kind Kind) string { return k.Gen(g) + "/" + kind.String() }

// chunkKey is chunk i of an object.
func chunkKey(dir string, i int) string { return fmt.Sprintf("%s/%06d", dir, i) }

// parseGen parses a generation node name.
func parseGen(name string) (uint32, bool) {
	n, err := strconv.ParseUint(name, 10, 32)
	return uint32(n), err == nil && len(name) == 10
}
