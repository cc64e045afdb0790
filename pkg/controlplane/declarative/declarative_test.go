package declarative

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

const base = `apiVersion: beamer/v1
instances:
  - name: web
    strategy: beamer
    vips: [198.18.0.1]
    port_low: 80
    port_high: 80
    buckets: 1000
    chain_window: 30s
    servers:
      - {id: 1025, address: 198.18.1.1, weight: 1}
      - {id: 1026, address: 198.18.1.2, weight: 1}
      - {id: 1027, address: 198.18.1.3, weight: 2}
      - {id: 1028, address: 198.18.1.4, weight: 1, drained: true}
  - name: mag
    strategy: maglev
    vips: [198.18.0.2]
    port_low: 443
    port_high: 443
    buckets: 65537
    chain_window: 1m0s
    health: {kind: tcp, port: 443}
    servers:
      - {id: 2000, address: 198.18.2.1, weight: 3}
`

func mustParse(t *testing.T, text string) *Document {
	t.Helper()
	d, err := Parse("test.yaml", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func apply(t *testing.T, op *fakeOperator, d *Document, opts Options) []Change {
	t.Helper()
	ch, err := Apply(context.Background(), op, d, opts)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// TestApplyFromEmptyThenIdempotent: creating from nothing takes one create
// and one add per instance (drain after), and applying again changes
// nothing.
func TestApplyFromEmptyThenIdempotent(t *testing.T) {
	op := newFake()
	d := mustParse(t, base)
	apply(t, op, d, Options{})
	want := []string{"create-instance", "add-dip", // mag sorts first
		"create-instance", "add-dip", "drain"}
	if got := op.ops(); !slices.Equal(got, want) {
		t.Fatalf("requests %v, want %v", got, want)
	}
	if n := len(op.requests[3].DIPs); n != 4 {
		t.Fatalf("web's add-dip carries %d servers, want all 4 in one request", n)
	}
	op.requests = nil
	if ch := apply(t, op, d, Options{}); len(ch) != 0 || len(op.requests) != 0 {
		t.Fatalf("second apply: changes %v, requests %v", ch, op.requests)
	}
	exp, err := Export(context.Background(), op)
	if err != nil {
		t.Fatal(err)
	}
	if ch := Diff(exp, d); len(ch) != 0 {
		t.Fatalf("diff after apply: %v", ch)
	}
	// Export carries every server as the file has them (sorted).
	want2 := mustParse(t, base)
	slices.SortFunc(want2.Instances, func(a, b Instance) int { return strings.Compare(a.Name, b.Name) })
	a, _ := exp.Marshal()
	b, _ := want2.Marshal()
	if !bytes.Equal(a, b) {
		t.Fatalf("export:\n%s\nwant:\n%s", a, b)
	}
}

// TestApplyMinimalRequests: two removes and two adds are one remove-dip
// and one add-dip request, adds first; weights and drains after, one each.
func TestApplyMinimalRequests(t *testing.T) {
	op := newFake()
	apply(t, op, mustParse(t, base), Options{})
	op.requests = nil
	next := strings.NewReplacer(
		"      - {id: 1025, address: 198.18.1.1, weight: 1}\n", "",
		"      - {id: 1026, address: 198.18.1.2, weight: 1}\n", "      - {id: 1030, address: 198.18.1.10, weight: 1}\n      - {id: 1031, address: 198.18.1.11, weight: 1}\n",
		"{id: 1027, address: 198.18.1.3, weight: 2}", "{id: 1027, address: 198.18.1.3, weight: 5, drained: true}",
		"{id: 1028, address: 198.18.1.4, weight: 1, drained: true}", "{id: 1028, address: 198.18.1.4, weight: 1}",
	).Replace(base)
	ch := apply(t, op, mustParse(t, next), Options{})
	want := []string{"add-dip", "remove-dip", "undrain", "set-weight", "drain"}
	if got := op.ops(); !slices.Equal(got, want) {
		t.Fatalf("requests %v, want %v", got, want)
	}
	if ids := op.requests[1].IDs; !slices.Equal(ids, []forwarding.ServerID{1025, 1026}) {
		t.Fatalf("remove-dip ids %v", ids)
	}
	if n := len(op.requests[0].DIPs); n != 2 {
		t.Fatalf("add-dip carries %d servers, want 2", n)
	}
	var buf bytes.Buffer
	Print(&buf, ch)
	for _, line := range []string{
		"+ instance web: server 1030 198.18.1.10 weight 1",
		"- instance web: server 1025 198.18.1.1 weight 1, drained through its chain window",
		"~ instance web: server 1027 weight 2 -> 5",
		"~ instance web: server 1028 undrain",
		"~ instance web: server 1027 drain",
	} {
		if !strings.Contains(buf.String(), line+"\n") {
			t.Errorf("diff lacks %q:\n%s", line, buf.String())
		}
	}
	// While the removed servers drain, apply of the same file is a no-op.
	op.requests = nil
	if ch := apply(t, op, mustParse(t, next), Options{}); len(ch) != 0 {
		t.Fatalf("apply during removal: %v", ch)
	}
	// Adding a removed id back before it is gone is refused, then works.
	back := strings.Replace(next, "    servers:\n      - {id: 1030", "    servers:\n      - {id: 1025, address: 198.18.1.1, weight: 1}\n      - {id: 1030", 1)
	if _, err := Apply(context.Background(), op, mustParse(t, back), Options{}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "still being removed") {
		t.Fatalf("re-adding a removing id: %v", err)
	}
	op.finish()
	apply(t, op, mustParse(t, back), Options{})
}

// TestApplyRefusesCreateOnlyChanges: strategy, VIPs, buckets differ →
// refused with the fields named, nothing submitted; --recreate does it.
func TestApplyRefusesCreateOnlyChanges(t *testing.T) {
	op := newFake()
	apply(t, op, mustParse(t, base), Options{})
	op.requests = nil
	changed := strings.Replace(base, "buckets: 1000", "buckets: 2000", 1)
	_, err := Apply(context.Background(), op, mustParse(t, changed), Options{})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "buckets: 1000 -> 2000") || !strings.Contains(err.Error(), "--recreate") {
		t.Fatalf("err %v", err)
	}
	if len(op.requests) != 0 {
		t.Fatalf("refused apply submitted %v", op.ops())
	}
	apply(t, op, mustParse(t, changed), Options{Recreate: true})
	if got, want := op.ops(), []string{"delete-instance", "create-instance", "add-dip", "drain"}; !slices.Equal(got, want) {
		t.Fatalf("recreate: %v, want %v", got, want)
	}
	// An instance left out is deleted only with Prune.
	only := mustParse(t, changed)
	only.Instances = only.Instances[:1]
	if _, err := Apply(context.Background(), op, only, Options{}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "--prune") {
		t.Fatalf("missing instance: %v", err)
	}
	op.requests = nil
	apply(t, op, only, Options{Prune: true})
	if got := op.ops(); !slices.Equal(got, []string{"delete-instance"}) {
		t.Fatalf("prune: %v", got)
	}
	// An address change of an id is refused.
	moved := strings.Replace(changed, "198.18.1.3,", "198.18.1.33,", 1)
	if _, err := Apply(context.Background(), op, mustParse(t, moved), Options{Prune: true}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "keeps its address") {
		t.Fatalf("address change: %v", err)
	}
}

func TestApplyDryRun(t *testing.T) {
	op := newFake()
	ch := apply(t, op, mustParse(t, base), Options{DryRun: true})
	if len(ch) != 5 || len(op.requests) != 0 {
		t.Fatalf("dry run: %d changes, %d requests", len(ch), len(op.requests))
	}
}

func TestCheetahKeysNeverExported(t *testing.T) {
	op := newFake()
	doc := `apiVersion: beamer/v1
instances:
  - name: ch
    strategy: cheetah
    vips: [198.18.0.3]
    port_low: 80
    port_high: 80
    buckets: 100
    chain_window: 30s
    cheetah: {policy: rr}
    servers: []
`
	apply(t, op, mustParse(t, doc), Options{})
	if k := op.requests[0].Config.Cheetah.Keys; k.Keys[0] == k.Keys[1] {
		t.Fatalf("created without random keys: %v", k)
	}
	exp, _ := Export(context.Background(), op)
	b, _ := exp.Marshal()
	if strings.Contains(string(b), "keys") || !strings.Contains(string(b), "policy: rr") {
		t.Fatalf("export:\n%s", b)
	}
	if ch := Diff(exp, mustParse(t, doc)); len(ch) != 0 {
		t.Fatalf("diff: %v", ch)
	}
}

func TestParseStrict(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"unknown key", strings.Replace(base, "buckets: 1000", "buckets: 1000\n    bukets: 3", 1), `instance "web": line 9: field bukets not found`},
		{"unknown server key", strings.Replace(base, "{id: 2000,", "{ids: 2000,", 1), `instance "mag": line 24: field ids not found`},
		{"version", strings.Replace(base, "beamer/v1", "beamer/v2", 1), `apiVersion "beamer/v2"`},
		{"no version", strings.Replace(base, "apiVersion: beamer/v1\n", "", 1), `apiVersion ""`},
		{"dup id", strings.Replace(base, "id: 1026", "id: 1025", 1), `instance "web": servers[1] (id 1025): id also used by servers[0]`},
		{"dup address", strings.Replace(base, "198.18.1.2,", "198.18.1.1,", 1), `instance "web": servers[1] (id 1026): address 198.18.1.1 also used by servers[0]`},
		{"weight", strings.Replace(base, "weight: 2}", "weight: 0}", 1), `instance "web": servers[2] (id 1027): weight 0`},
		{"family", strings.Replace(base, "198.18.1.3", "2001:db8::3", 1), `instance "web": servers[2] (id 1027): DIP address 2001:db8::3 is IPv6 but instance "web" is IPv4`},
		{"bad address", strings.Replace(base, "198.18.1.3", "198.18.1.300", 1), `test.yaml: instance "web" (line 3): ParseAddr("198.18.1.300")`},
		{"dup instance", strings.Replace(base, "name: mag", "name: web", 1), `instance "web" listed twice`},
		{"bad config", strings.Replace(base, "strategy: beamer", "strategy: nope", 1), `instance "web": configuration`},
		{"two documents", base + "---\n" + base, "more than one YAML document"},
	} {
		_, err := Parse("test.yaml", strings.NewReader(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "test.yaml") {
			t.Errorf("%s: error %v, want one starting with test.yaml and containing %q", c.name, err, c.want)
		}
	}
}

// TestEveryConfigFieldCarried: a field added to forwarding.Instance must be
// added to the document (document.go) or exports would silently drop it.
func TestEveryConfigFieldCarried(t *testing.T) {
	var got []string
	for f := range reflect.TypeFor[forwarding.Instance]().Fields() {
		got = append(got, f.Name)
	}
	if !slices.Equal(got, configFields) {
		t.Fatalf("forwarding.Instance fields %v; the document carries %v", got, configFields)
	}
}

// TestDiffDefaultsEqual: a file spelling out defaults equals a live
// instance that left them out.
func TestDiffDefaultsEqual(t *testing.T) {
	op := newFake()
	apply(t, op, mustParse(t, base), Options{})
	spelled := strings.Replace(base, "    chain_window: 30s\n", "    chain_window: 30s\n    max_chain: 4\n    encap: ipip\n    icmp_echo: drop\n    health: {kind: agent, port: 80, agent_port: 9300}\n    server_ids: 1025-65535\n", 1)
	exp, err := Export(context.Background(), op)
	if err != nil {
		t.Fatal(err)
	}
	if ch := Diff(exp, mustParse(t, spelled)); len(ch) != 0 {
		t.Fatalf("defaults spelled out differ: %v", ch)
	}
	other := strings.Replace(base, "    chain_window: 30s\n", "    chain_window: 30s\n    max_chain: 3\n", 1)
	ch := Diff(exp, mustParse(t, other))
	if len(ch) != 3 || ch[0].Kind != RecreateInstance || ch[0].Fields[0] != "max_chain: 4 -> 3" {
		t.Fatalf("max_chain 3: %v", ch)
	}
}

// TestDiffDeletesFirst: an instance left out is deleted before a new one
// that may take its VIP is created.
func TestDiffDeletesFirst(t *testing.T) {
	op := newFake()
	apply(t, op, mustParse(t, base), Options{})
	moved := strings.Replace(base, "name: web", "name: aaa", 1)
	ch := Diff(mustExport(t, op), mustParse(t, moved))
	if len(ch) < 2 || ch[0].Kind != DeleteInstance || ch[0].Instance != "web" || ch[1].Kind != CreateInstance || ch[1].Instance != "aaa" {
		t.Fatalf("changes %v", ch)
	}
}

func mustExport(t *testing.T, op Operator) *Document {
	t.Helper()
	d, err := Export(context.Background(), op)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
