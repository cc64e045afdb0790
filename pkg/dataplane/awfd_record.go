package dataplane

import (
	"encoding/binary"
	"fmt"

	"github.com/beamer-lb/beamer/pkg/strategy/awfd/classes"
)

// Layout of struct awfd_record (bpf/strategy/awfd_select.h).
const (
	awfdMaxClasses = 16
	awfdMaxServers = 1024
	awfdRecordSize = 16 + 4*awfdMaxClasses + 2*awfdMaxClasses + 2*awfdMaxClasses + 2*awfdMaxServers
)

// packAWFD lays a validated record out as the mux reads it: per class its
// range end, first member and member count, the members of all classes
// one after the other (idle servers are not carried: they get nothing).
func packAWFD(r *classes.Record) ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if r.M() > awfdMaxClasses {
		return nil, fmt.Errorf("awfd record: %d classes, the mux holds %d", r.M(), awfdMaxClasses)
	}
	b := make([]byte, awfdRecordSize)
	le := binary.LittleEndian
	le.PutUint64(b[0:], r.Seq)
	le.PutUint32(b[8:], r.Total())
	b[12] = byte(r.M())
	upper, start, count, servers := 16, 16+4*awfdMaxClasses, 16+6*awfdMaxClasses, 16+8*awfdMaxClasses
	next := 0
	for k, members := range r.Classes {
		if next+len(members) > awfdMaxServers {
			return nil, fmt.Errorf("awfd record: more than %d servers", awfdMaxServers)
		}
		le.PutUint32(b[upper+4*k:], r.Upper[k])
		le.PutUint16(b[start+2*k:], uint16(next))
		le.PutUint16(b[count+2*k:], uint16(len(members)))
		for _, id := range members {
			le.PutUint16(b[servers+2*next:], uint16(id))
			next++
		}
	}
	return b, nil
}
