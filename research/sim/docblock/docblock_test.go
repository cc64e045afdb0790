package docblock

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSetGetSync(t *testing.T) {
	doc := "intro\n<!-- a:begin -->\nold\n<!-- a:end -->\nmiddle\n<!-- b:begin -->\n<!-- b:end -->\nend\n"
	got, err := Set(doc, "a", "new")
	if err != nil {
		t.Fatal(err)
	}
	if want := "intro\n<!-- a:begin -->\nnew\n<!-- a:end -->\nmiddle\n<!-- b:begin -->\n<!-- b:end -->\nend\n"; got != want {
		t.Errorf("Set: got %q, want %q", got, want)
	}
	if g, err := Get(got, "b"); err != nil || g != "" {
		t.Errorf("Get empty block: %q, %v", g, err)
	}
	for _, bad := range []string{
		"no markers\n",
		"<!-- a:begin -->\nno end\n",
		"x <!-- a:begin -->\nnot at a line start\n<!-- a:end -->\n",
		"<!-- a:begin -->\n1\n<!-- a:end -->\n<!-- a:begin -->\n2\n<!-- a:end -->\n",
	} {
		if _, err := Set(bad, "a", "x"); err == nil {
			t.Errorf("Set accepted %q", bad)
		}
	}

	path := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "new", "b": "filled\n"}
	if err := Sync(path, want, false); err == nil || !strings.Contains(err.Error(), `block "a"`) {
		t.Errorf("Sync without update on a stale doc: %v", err)
	}
	if err := Sync(path, want, true); err != nil {
		t.Fatal(err)
	}
	if err := Sync(path, want, false); err != nil {
		t.Errorf("Sync after update: %v", err)
	}
}
