package ring_test

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"net/netip"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// goldenFile holds raw payloads written by the codec before the strategies'
// sections moved to their folders (pkg/strategy/NAME/payload.go), one a
// line: name, kind, generation, hex. A store keeps these bytes (and a
// restored backup brings old ones back): they must read the same for ever,
// and the codec must still write them byte for byte. Never regenerate it.
const goldenFile = "testdata/payloads.golden"

// goldenCases are the tables and deltas the golden payloads were written
// from: every strategy section alone, together, and absent.
func goldenCases() (blobs map[string]*forwarding.Table, deltas map[string]*forwarding.Delta) {
	table := func(gen uint32, v6 bool) *forwarding.Table {
		t := forwarding.NewTable(6)
		t.Generation = gen
		for i := range 3 {
			a := netip.AddrFrom4([4]byte{198, 18, 0, byte(10 + i)})
			if v6 {
				a = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(10 + i)})
			}
			t.Servers[forwarding.ServerID(1025+i)] = forwarding.Server{Addr: a, State: forwarding.Active}
		}
		retired := netip.MustParseAddr("198.18.0.99")
		if v6 {
			retired = netip.MustParseAddr("2001:db8::99")
		}
		t.Servers[1028] = forwarding.Server{Addr: retired, State: forwarding.Retired}
		t.Buckets = []forwarding.Bucket{{Current: 1025}, {Current: 1026, History: forwarding.Chain{1028}, Changed: 1_700_000_100},
			{Current: 1027}, {Current: 1025, History: forwarding.Chain{1028, 1027}, Changed: 1_700_000_200}, {Current: 1026}, {Current: 1027}}
		return t
	}
	mct := map[uint64]forwarding.ServerID{0x0123456789abcdef: 1025, 1: 1026, 1 << 63: 1027}
	keys := cookie.Keys{Current: 1, Keys: [2]cookie.Key{{1, 2, 3, 4}, {0xdeadbeef, 6, 7, 0xffffffff}}}
	loads := map[forwarding.ServerID]uint32{1027: 7, 1025: 0, 1026: 1 << 31}

	blobs = map[string]*forwarding.Table{}
	blobs["blob-plain"] = table(5, false)
	blobs["blob-mct"] = table(6, false)
	blobs["blob-mct"].MCT = mct
	blobs["blob-mct-v6"] = table(7, true)
	blobs["blob-mct-v6"].MCT = mct
	blobs["blob-cheetah"] = table(8, false)
	blobs["blob-cheetah"].Cheetah = &forwarding.CheetahState{Keys: keys, Loads: loads}
	blobs["blob-cheetah-noloads"] = table(9, false)
	blobs["blob-cheetah-noloads"].Cheetah = &forwarding.CheetahState{Keys: keys}
	blobs["blob-mct-cheetah"] = table(10, false)
	blobs["blob-mct-cheetah"].MCT = mct
	blobs["blob-mct-cheetah"].Cheetah = &forwarding.CheetahState{Keys: keys, Loads: loads}

	servers := []forwarding.ServerChange{{ID: 1029, Server: forwarding.Server{Addr: netip.MustParseAddr("198.18.0.13"), State: forwarding.Active}}, {ID: 1028, Remove: true}}
	buckets := []forwarding.BucketChange{{Index: 2, Bucket: forwarding.Bucket{Current: 1029, History: forwarding.Chain{1027}, Changed: 1_700_000_300}}}
	mctChanges := []forwarding.MCTChange{{Sig: 1, Server: 1025}, {Sig: 2, Remove: true}, {Sig: 1 << 63, Server: 1029}}
	// A delta reads back with empty, not nil, server and bucket lists.
	noServers, noBuckets := []forwarding.ServerChange{}, []forwarding.BucketChange{}
	deltas = map[string]*forwarding.Delta{
		"delta-plain":         {Generation: 11, Servers: servers, Buckets: buckets},
		"delta-mct":           {Generation: 12, Servers: servers, Buckets: buckets, MCT: mctChanges},
		"delta-mct-only":      {Generation: 13, Servers: noServers, Buckets: noBuckets, MCT: mctChanges},
		"delta-cheetah":       {Generation: 14, Servers: noServers, Buckets: buckets, Cheetah: &forwarding.CheetahState{Keys: keys, Loads: loads}},
		"delta-mct-cheetah":   {Generation: 15, Servers: servers, Buckets: buckets, MCT: mctChanges, Cheetah: &forwarding.CheetahState{Keys: keys}},
		"delta-cheetah-empty": {Generation: 16, Servers: noServers, Buckets: noBuckets, Cheetah: &forwarding.CheetahState{Keys: keys}},
	}
	return blobs, deltas
}

type golden struct {
	name, kind string
	gen        uint32
	raw        []byte
}

func readGolden(t *testing.T) []golden {
	t.Helper()
	f, err := os.Open(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []golden
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 4 {
			t.Fatalf("%s: bad line %q", goldenFile, line)
		}
		gen, err := strconv.ParseUint(fs[2], 10, 32)
		if err != nil {
			t.Fatalf("%s: %q: %v", goldenFile, line, err)
		}
		raw, err := hex.DecodeString(fs[3])
		if err != nil {
			t.Fatalf("%s: %q: %v", goldenFile, line, err)
		}
		out = append(out, golden{fs[0], fs[1], uint32(gen), raw})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPayloadGolden: payloads written by the codec before the strategies'
// sections moved read back into the tables and deltas they were written
// from, and the codec writes those byte for byte again.
func TestPayloadGolden(t *testing.T) {
	blobs, deltas := goldenCases()
	seen := 0
	for _, g := range readGolden(t) {
		switch g.kind {
		case "blob":
			want, ok := blobs[g.name]
			if !ok {
				t.Fatalf("golden blob %s: no such case", g.name)
			}
			got, err := ring.UnmarshalBlob(g.gen, g.raw)
			if err != nil {
				t.Errorf("golden %s: %v", g.name, err)
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("golden %s reads as\n %+v\nwant\n %+v", g.name, got, want)
			}
			if raw, err := ring.MarshalBlob(want); err != nil || !bytes.Equal(raw, g.raw) {
				t.Errorf("golden %s written now: %x, %v\nwant %x", g.name, raw, err, g.raw)
			}
		case "delta":
			want, ok := deltas[g.name]
			if !ok {
				t.Fatalf("golden delta %s: no such case", g.name)
			}
			got, err := ring.UnmarshalDelta(g.gen, g.raw)
			if err != nil {
				t.Errorf("golden %s: %v", g.name, err)
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("golden %s reads as\n %+v\nwant\n %+v", g.name, got, want)
			}
			if raw, err := ring.MarshalDelta(want); err != nil || !bytes.Equal(raw, g.raw) {
				t.Errorf("golden %s written now: %x, %v\nwant %x", g.name, raw, err, g.raw)
			}
		default:
			t.Fatalf("golden %s: kind %q", g.name, g.kind)
		}
		seen++
	}
	if seen != len(blobs)+len(deltas) {
		t.Errorf("%d golden payloads for %d cases", seen, len(blobs)+len(deltas))
	}
}
