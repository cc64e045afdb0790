package dataplane

import (
	"encoding/binary"
	"fmt"

	"github.com/beamer-lb/beamer/pkg/strategy/awfd/classes"
)

// packAWFD lays a validated record out as the mux reads it: per class its
// range end, first member and member count, the members of all classes
// one after the other (idle servers are not carried: they get nothing).
func packAWFD(r *classes.Record) ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	l := muxLimit().awfd // struct awfd_record's layout (bpf/strategy/awfd_select.h)
	if r.M() > l.maxClasses {
		return nil, fmt.Errorf("awfd record: %d classes, the mux holds %d", r.M(), l.maxClasses)
	}
	b := make([]byte, l.size)
	le := binary.LittleEndian
	le.PutUint64(b[0:], r.Seq)
	le.PutUint32(b[8:], r.Total())
	b[12] = byte(r.M())
	next := 0
	for k, members := range r.Classes {
		if next+len(members) > l.maxServers {
			return nil, fmt.Errorf("awfd record: more than %d servers", l.maxServers)
		}
		le.PutUint32(b[l.upper+4*k:], r.Upper[k])
		le.PutUint16(b[l.start+2*k:], uint16(next))
		le.PutUint16(b[l.count+2*k:], uint16(len(members)))
		for _, id := range members {
			le.PutUint16(b[l.servers+2*next:], uint16(id))
			next++
		}
	}
	return b, nil
}
