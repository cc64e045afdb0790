package assign

import (
	"errors"
	"fmt"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Server is one server as the assignment algorithms see it.
type Server struct {
	ID forwarding.ServerID
	// Weight is the server's relative capacity. 0 means draining: the server
	// must end up with no bucket (Beamer §4.5 removes a DIP by first setting
	// its weight to zero and rebalancing).
	Weight uint32
}

// ErrServers wraps every error about a server list.
var ErrServers = errors.New("assign: invalid server list")

// CheckServers reports whether servers can be given to the algorithms of
// this package: valid and distinct ids. The controller checks its input with
// it; the algorithms themselves panic on a list it rejects, since passing one
// is a programming error.
func CheckServers(servers []Server) error {
	var seen [int(forwarding.MaxServerID) + 1]bool
	for _, s := range servers {
		if !s.ID.Valid() {
			return fmt.Errorf("%w: server id %d outside %d–%d", ErrServers, s.ID, forwarding.MinServerID, forwarding.MaxServerID)
		}
		if seen[s.ID] {
			return fmt.Errorf("%w: server id %d listed twice", ErrServers, s.ID)
		}
		seen[s.ID] = true
	}
	return nil
}

func mustCheckServers(servers []Server) {
	if err := CheckServers(servers); err != nil {
		panic(err)
	}
}

// idSpace is the size of arrays indexed by server id; indexing by id instead
// of using maps keeps the hot loops free of hashing.
const idSpace = int(forwarding.MaxServerID) + 1
