package etcdstore_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// TestChildrenPaged: Children reads more than one page of keys (a flat
// directory of 2500, a subtree of 2500 under one child, skipped in one
// jump) and still names every child once, including names that sort
// between a name and its subtree ("b", "b-2", "b.c", "b/…").
func TestChildrenPaged(t *testing.T) {
	st := storetest.EmbeddedT(t)
	ctx := storetest.Context(t)
	var ops []store.Op
	var flat []string
	for i := range 2500 {
		ops = append(ops, store.Put(fmt.Sprintf("/p/flat/%05d", i), []byte("x")))
		flat = append(flat, fmt.Sprintf("%05d", i))
		ops = append(ops, store.Put(fmt.Sprintf("/p/a/deep/%05d", i), []byte("x")))
	}
	for _, k := range []string{"/p/b", "/p/b/x", "/p/b-2/x", "/p/b.c", "/p/c/%"} {
		ops = append(ops, store.Put(k, []byte("x")))
	}
	for len(ops) > 0 {
		n := min(len(ops), 100)
		if err := st.Commit(ctx, ops[:n]...); err != nil {
			t.Fatal(err)
		}
		ops = ops[n:]
	}
	got, err := st.Children(ctx, "/p")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "b-2", "b.c", "c", "flat"}; !slices.Equal(got, want) {
		t.Errorf("children of /p: %v, want %v", got, want)
	}
	got, err = st.Children(ctx, "/p/flat")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, flat) {
		t.Errorf("children of /p/flat: %d names (first %v), want %d", len(got), got[:min(3, len(got))], len(flat))
	}
}
