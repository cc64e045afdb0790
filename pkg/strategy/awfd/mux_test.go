package awfd

import (
	"testing"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/strategy/awfd/classes"
)

// TestRecordLayoutFromSpec: struct awfd_record's layout is read from the
// compiled mux, and the number of servers it holds is the one the class
// records are validated against before anything reaches a mux.
func TestRecordLayoutFromSpec(t *testing.T) {
	spec, err := dataplane.MuxSpec()
	if err != nil {
		t.Fatal(err)
	}
	l, err := layoutOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", l)
	if l.maxServers != classes.MaxServers {
		t.Errorf("AWFD_MAX_SERVERS is %d, classes.MaxServers %d", l.maxServers, classes.MaxServers)
	}
	if !(0 < l.upper && l.upper < l.start && l.start < l.count && l.count < l.servers && l.servers+2*l.maxServers <= l.size) {
		t.Errorf("awfd record layout %+v", l)
	}
	if l.maxClasses < 2 {
		t.Errorf("%d classes", l.maxClasses)
	}
}
