package cheetah

import (
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// TestAgentRecordLayoutFromSpec: struct cheetah_vip's layout is read from
// the compiled agent (two 16-byte keys, the server slot, the key id), and
// a record written with it reads back the same.
func TestAgentRecordLayoutFromSpec(t *testing.T) {
	spec, err := dataplane.AgentSpec()
	if err != nil {
		t.Fatal(err)
	}
	l, err := agentLayoutOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", l)
	if l.keys != 0 || l.keySize != 16 || l.id != 32 || l.kid != 34 || l.size != 36 {
		t.Errorf("cheetah_vip layout %+v, want keys at 0, id at 32, kid at 34, 36 bytes", l)
	}
	v := AgentVIP{VIP: netip.MustParseAddr("198.18.100.1"), ID: 1030,
		Keys: cookie.Keys{Current: 1, Keys: [2]cookie.Key{{1, 2, 3, 4}, {5, 6, 7, 0xfffffff8}}}}
	rec := l.encode(v)
	if got := l.decode(v.VIP, rec); got != v {
		t.Errorf("record %x reads back %+v, wrote %+v", rec, got, v)
	}
	if rec[32] != 0x06 || rec[33] != 0x04 || rec[34] != 1 || rec[0] != 1 || rec[16] != 5 {
		t.Errorf("record %x: not the program's byte order", rec)
	}
}
