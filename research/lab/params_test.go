package lab

import (
	"strings"
	"testing"
)

// Every experiment at every size and strategy has parameters that
// validate and a schedule that ends.
func TestDefaultParamsValid(t *testing.T) {
	for _, e := range ExperimentOrder {
		for _, size := range Sizes {
			for _, s := range []string{"beamer", "maglev"} {
				p, err := DefaultParams(e, size, s)
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Validate(); err != nil {
					t.Errorf("%s/%s/%s: %v", e, size, s, err)
				}
				sc, _, err := ExperimentScenario(&p)
				if err != nil {
					t.Errorf("%s/%s/%s: %v", e, size, s, err)
					continue
				}
				if servers, muxes := sc.Needs(); servers != p.Servers || muxes != p.Muxes {
					t.Errorf("%s/%s: scenario needs %d servers and %d muxes, parameters say %d and %d", e, size, servers, muxes, p.Servers, p.Muxes)
				}
			}
		}
	}
}

func TestValidateRejects(t *testing.T) {
	for name, change := range map[string]func(*Params){
		"strategy":         func(p *Params) { p.Strategy = "random" },
		"prime for maglev": func(p *Params) { p.Strategy, p.Buckets = "maglev", 1000 },
		"buckets":          func(p *Params) { p.Buckets = 3 },
		"file size":        func(p *Params) { p.FileSize = 0 },
		"stall":            func(p *Params) { p.Stall = 0 },
		"removed":          func(p *Params) { p.Removed = 8 },
		"clients":          func(p *Params) { p.Clients = MaxClients + 1 },
	} {
		p, _ := DefaultParams("affinity", SizeCI, "beamer")
		change(&p)
		if err := p.Validate(); err == nil {
			t.Errorf("%s: accepted %+v", name, p)
		}
	}
}

func TestParseScenario(t *testing.T) {
	sc, err := ParseScenario("ok", strings.NewReader("# comment\nservers 0 1 2\nmuxes 0 1\n5s remove-server 2 # why\n10s kill-mux 1\n12s set-weight 0 3\n20s end\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s, m := sc.Needs(); s != 3 || m != 2 || len(sc.Events) != 4 || sc.Duration().String() != "20s" {
		t.Errorf("parsed %+v", sc)
	}
	for text, want := range map[string]string{
		"servers 0\nmuxes 0\n5s jump 1\n9s end\n":              "unknown action",
		"servers 0\nmuxes 0\n5s add-mux\n9s end\n":             "takes 1 integer",
		"servers 0\nmuxes 0\n5s add-mux 1\n":                   "last event must be `end`",
		"servers 0\nmuxes 0\n5s add-mux 1\n2s end\n":           "comes before",
		"muxes 0\n5s end\n":                                    "needs `servers",
		"servers 0\nmuxes 0\nsoon add-mux 1\n9s end\n":         "neither",
		"servers 0\nmuxes 0\n1s flood-start 9999999\n9s end\n": "rate must be",
	} {
		_, err := ParseScenario("bad", strings.NewReader(text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error containing %q", text, err, want)
		}
	}
}

func TestSYNPacketChecksums(t *testing.T) {
	b := make([]byte, 40)
	synPacket(b, 0xc6128001, netipAddrPort80(), 4242, 7)
	if checksum(b[:20], 0) != 0 {
		t.Error("IPv4 header checksum does not verify")
	}
	pseudo := uint32(0xc612) + 0x8001 + 0xc612 + 0x6401 + 6 + 20
	if checksum(b[20:], pseudo) != 0 {
		t.Error("TCP checksum does not verify")
	}
}
