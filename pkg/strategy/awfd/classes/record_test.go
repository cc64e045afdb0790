package classes

import (
	"errors"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

func ids(n int) []forwarding.ServerID {
	out := make([]forwarding.ServerID, n)
	for i := range out {
		out[i] = forwarding.MinServerID + forwarding.ServerID(i)
	}
	return out
}

func TestBuildRanges(t *testing.T) {
	r, err := Build(7, 1000, 4, ids(6), []int{4, 2, 0, 2, 1, 4})
	if err != nil {
		t.Fatal(err)
	}
	// class 1: 1 server (1), class 2: 2 (4), class 3: 0, class 4: 2 (8)
	want := []uint32{1, 5, 5, 13}
	for k, u := range want {
		if r.Upper[k] != u {
			t.Fatalf("Upper = %v, want %v", r.Upper, want)
		}
	}
	if r.Total() != 13 || r.Weight(1025) != 4 || r.Weight(1027) != 0 || len(r.Idle) != 1 {
		t.Fatalf("record %+v", r)
	}
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(b)
	if err != nil || back.Total() != 13 || back.Seq != 7 {
		t.Fatalf("round trip: %v %+v", err, back)
	}
	empty, err := Build(1, 0, 4, ids(2), []int{0, 0})
	if err != nil || !empty.Empty() || empty.Select(12345) != forwarding.NoServer {
		t.Fatalf("empty record: %v %+v", err, empty)
	}
}

// Hostile records: each is refused with ErrRecord, none panics.
func TestDecodeHostile(t *testing.T) {
	big := `{"seq":1,"at_ms":0,"classes":[[` + strings.Repeat("1025,", 5000) + `1025]],"upper":[1]}`
	many := make([]string, 0, MaxServers+1)
	for i := 0; i <= MaxServers; i++ {
		many = append(many, itoa(1025+i))
	}
	cases := map[string]string{
		"not json":         `hello`,
		"empty":            ``,
		"no classes":       `{"seq":1,"at_ms":0,"classes":[],"upper":[]}`,
		"17 classes":       `{"seq":1,"classes":[[],[],[],[],[],[],[],[],[],[],[],[],[],[],[],[],[]],"upper":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}`,
		"seq 0":            `{"seq":0,"classes":[[1025]],"upper":[1]}`,
		"ranges lie":       `{"seq":1,"classes":[[1025],[1026]],"upper":[1,9]}`,
		"ranges short":     `{"seq":1,"classes":[[1025],[1026]],"upper":[1]}`,
		"id 0":             `{"seq":1,"classes":[[0]],"upper":[1]}`,
		"id below 1025":    `{"seq":1,"classes":[[80]],"upper":[1]}`,
		"id too big":       `{"seq":1,"classes":[[70000]],"upper":[1]}`,
		"negative id":      `{"seq":1,"classes":[[-1]],"upper":[1]}`,
		"duplicate":        `{"seq":1,"classes":[[1025],[1025]],"upper":[1,3]}`,
		"idle twice":       `{"seq":1,"classes":[[1025]],"upper":[1],"idle":[1025]}`,
		"unsorted":         `{"seq":1,"classes":[[1026,1025]],"upper":[2]}`,
		"unknown field":    `{"seq":1,"classes":[[1025]],"upper":[1],"evil":true}`,
		"trailing":         `{"seq":1,"classes":[[1025]],"upper":[1]} {}`,
		"huge":             big,
		"too many servers": `{"seq":1,"classes":[[` + strings.Join(many, ",") + `]],"upper":[` + itoa(MaxServers+1) + `]}`,
		"upper overflow":   `{"seq":1,"classes":[[1025]],"upper":[4294967297]}`,
		"null classes":     `{"seq":1,"classes":null,"upper":null}`,
		"class not a list": `{"seq":1,"classes":[5],"upper":[1]}`,
		"negative upper":   `{"seq":1,"classes":[[1025]],"upper":[-1]}`,
	}
	for name, in := range cases {
		if _, err := Decode([]byte(in)); !errors.Is(err, ErrRecord) {
			t.Errorf("%s: err = %v, want ErrRecord", name, err)
		}
	}
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			return string(b[n:])
		}
	}
}
