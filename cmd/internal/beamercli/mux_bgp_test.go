package beamercli

import "testing"

func TestBGPFlags(t *testing.T) {
	if o, err := (&bgpFlags{}).options(nil); o != nil || err != nil {
		t.Errorf("no peer: want no BGP, got %v, %v", o, err)
	}
	for name, f := range map[string]bgpFlags{
		"peer without ASN": {peers: []string{"198.18.0.254:65000"}, hold: 9e9},
		"ASN without peer": {asn: 65001},
		"hold below 3s":    {asn: 65001, peers: []string{"198.18.0.254:65000"}, hold: 2e9},
		"fractional hold":  {asn: 65001, peers: []string{"198.18.0.254:65000"}, hold: 3500e6},
		"bad router id":    {asn: 65001, peers: []string{"198.18.0.254:65000"}, hold: 9e9, routerID: "x"},
		"bad peer":         {asn: 65001, peers: []string{"198.18.0.254"}, hold: 9e9},
	} {
		if _, err := f.options(nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	o, err := (&bgpFlags{asn: 65001, peers: []string{"198.18.0.254:65000"}, hold: 3e9}).options(nil)
	if err != nil || o.ASN != 65001 || len(o.Peers) != 1 || o.HoldTime != 3e9 {
		t.Errorf("got %+v, %v", o, err)
	}
}
