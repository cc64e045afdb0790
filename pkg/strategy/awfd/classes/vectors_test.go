package classes

import (
	"encoding/json"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/awfd-vectors.json from the Go selection")

const vectorsPath = "../../../../testdata/awfd-vectors.json"

// vectorRecords are the records the vectors cover: the paper's example,
// every class populated, empty classes between populated ones, a single
// server, the LCF case (m = 1), m = 16 and a record with no class.
func vectorRecords(t *testing.T) []VectorCase {
	build := func(name string, m int, w []int) VectorCase {
		r, err := Build(uint64(len(name)), 0, m, ids(len(w)), w)
		if err != nil {
			t.Fatal(err)
		}
		return VectorCase{Name: name, Record: r}
	}
	w16 := make([]int, 40)
	for i := range w16 {
		w16[i] = (i * 7) % 17
	}
	return []VectorCase{
		build("paper-fig3-m2", 2, []int{2, 1, 0, 0}),
		build("m4-all-classes", 4, []int{4, 2, 0, 2, 1, 4, 3, 3, 1}),
		build("m4-gaps", 4, []int{4, 1, 4, 1, 0}),
		build("single", 4, []int{3}),
		build("lcf-m1", 1, []int{0, 1, 0}),
		build("m16", 16, w16),
		build("empty", 4, []int{0, 0, 0}),
	}
}

func vectorHashes() []uint32 {
	hs := []uint32{0, 1, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff}
	x := uint32(0x12345678)
	for range 58 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		hs = append(hs, x)
	}
	return hs
}

// The committed vectors are what the Go selection computes; -update
// rewrites them (and the C side must then agree: pkg/dataplane).
func TestVectors(t *testing.T) {
	cases := vectorRecords(t)
	for i := range cases {
		for _, h := range vectorHashes() {
			cases[i].Picks = append(cases[i].Picks, Pick{Hash: h, Class: cases[i].Record.ClassOf(h), Server: cases[i].Record.Select(h)})
		}
	}
	if *update {
		b, _ := json.MarshalIndent(Vectors{Cases: cases}, "", " ")
		if err := os.WriteFile(vectorsPath, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v, err := LoadVectors(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) != len(cases) {
		t.Fatalf("%d cases in the file, %d computed", len(v.Cases), len(cases))
	}
	for i, c := range v.Cases {
		for j, p := range c.Picks {
			if got := c.Record.Select(p.Hash); got != p.Server || c.Record.ClassOf(p.Hash) != p.Class {
				t.Errorf("%s: hash %#x: server %d class %d, file says %d %d", c.Name, p.Hash, got, c.Record.ClassOf(p.Hash), p.Server, p.Class)
			}
			if p != cases[i].Picks[j] {
				t.Errorf("%s: pick %d differs from the computed one", c.Name, j)
			}
		}
	}
}
