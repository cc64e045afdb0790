package storeurl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/beamer-lb/beamer/pkg/store/etcdstore"
)

// The embedded store as one member of a replicated etcd cluster, one per
// controller host (docs/control-plane.md, "Three controller hosts on the
// embedded store"):
//
//	name=a                         this member's name
//	peer=HOST:PORT                 where it listens for the other members
//	peer-advertise=HOST:PORT       where they dial it (default peer=)
//	initial-cluster=a=H:P,b=H:P,…  every member at bootstrap (etcd's list; scheme optional)
//	cluster-state=existing         join a running cluster (after `beamer store members add`)
//	cluster-token=T                tells clusters with the same members apart
//	peer-cert=, peer-key=, peer-ca= the members' mutual TLS (required off loopback, secure.go)

// checkCluster refuses cluster parameters that cannot work together,
// before anything starts.
func (t *Target) checkCluster() error {
	q := t.query
	switch q.Get("cluster-state") {
	case "", "new", "existing":
	default:
		return fmt.Errorf("cluster-state %q: want new (bootstrap with initial-cluster) or existing (join a running cluster)", q.Get("cluster-state"))
	}
	n := 0
	for _, k := range []string{"peer-cert", "peer-key", "peer-ca"} {
		if q.Get(k) != "" {
			n++
		}
	}
	if n != 0 && n != 3 {
		return errors.New("peer TLS is mutual: give peer-cert=, peer-key= and peer-ca= together")
	}
	if ic := q.Get("initial-cluster"); ic != "" {
		if q.Get("name") == "" {
			return errors.New("initial-cluster= needs this member's name= (one of the names it lists)")
		}
		scheme := "http"
		if n == 3 {
			scheme = "https"
		}
		if _, err := etcdstore.NormalizeInitialCluster(ic, scheme); err != nil {
			return errors.New(strings.TrimPrefix(err.Error(), "etcdstore: "))
		}
	}
	if q.Get("cluster-state") == "existing" && q.Get("initial-cluster") == "" {
		return errors.New("cluster-state=existing needs initial-cluster= (as `beamer store members add` prints it)")
	}
	return nil
}
