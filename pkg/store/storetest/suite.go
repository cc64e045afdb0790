// Package storetest is the conformance suite every store.Store backend
// passes, and helpers that start real store servers for tests (ZooKeeper
// and etcd processes from the Debian packages).
//
// A backend's test calls Run with a function that opens a new connection to
// one running server; every subtest works under its own key prefix, so the
// whole suite shares one server.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
)

// Opener opens a new, independent connection to the server under test.
// The suite closes what it opens (closing twice must be harmless).
type Opener func(t *testing.T) store.Store

// Run runs the conformance suite.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		f    func(*testing.T, Opener, string)
	}{
		{"GetPut", testGetPut},
		{"Children", testChildren},
		{"Delete", testDelete},
		{"DeleteTree", testDeleteTree},
		{"CommitAtomic", testCommitAtomic},
		{"Conditions", testConditions},
		{"ValueLimit", testValueLimit},
		{"Watch", testWatch},
		{"Election", testElection},
		{"ElectionAfterClose", testElectionAfterClose},
		{"FencedStore", testFencedStore},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := fmt.Sprintf("/conformance/%s-%d", strings.ToLower(tc.name), rand.Uint32())
			tc.f(t, open, root)
		})
	}
}

func openClosed(t *testing.T, open Opener) store.Store {
	s := open(t)
	t.Cleanup(func() { s.Close() })
	return s
}

func mustPut(t *testing.T, s store.Store, key, value string) {
	t.Helper()
	if err := s.Commit(Context(t), store.Put(key, []byte(value))); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

func mustGet(t *testing.T, s store.Store, key string) store.Item {
	t.Helper()
	it, err := s.Get(Context(t), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return it
}

func wantNotFound(t *testing.T, s store.Store, key string) {
	t.Helper()
	if it, err := s.Get(Context(t), key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get %s = %q, %v; want ErrNotFound", key, it.Value, err)
	}
}

func testGetPut(t *testing.T, open Opener, root string) {
	s, other := openClosed(t, open), openClosed(t, open)
	k := root + "/a/b"
	wantNotFound(t, s, k)
	mustPut(t, s, k, "one")
	it := mustGet(t, other, k) // visible through another connection
	if string(it.Value) != "one" || it.Version == 0 {
		t.Fatalf("got %q version %d", it.Value, it.Version)
	}
	mustPut(t, s, k, "two")
	it2 := mustGet(t, s, k)
	if string(it2.Value) != "two" || it2.Version == it.Version {
		t.Fatalf("after second put: %q version %d (first version %d)", it2.Value, it2.Version, it.Version)
	}
	mustPut(t, s, root+"/empty", "")
	if it := mustGet(t, s, root+"/empty"); len(it.Value) != 0 {
		t.Fatalf("empty value read back as %q", it.Value)
	}
	// A key that exists only as the parent of another has no value.
	wantNotFound(t, s, root+"/a")
	bin := []byte{0, 1, 2, 0xff, 'v', 0}
	if err := s.Commit(Context(t), store.Put(root+"/bin", bin)); err != nil {
		t.Fatal(err)
	}
	if it := mustGet(t, s, root+"/bin"); !bytes.Equal(it.Value, bin) {
		t.Fatalf("binary value read back as %v", it.Value)
	}
	if _, err := s.Get(Context(t), "relative/key"); err == nil {
		t.Fatal("relative key accepted")
	}
}

func testChildren(t *testing.T, open Opener, root string) {
	s := openClosed(t, open)
	for _, k := range []string{"/b", "/a", "/c/x", "/c/y/z", "/a/deep"} {
		mustPut(t, s, root+k, k)
	}
	got, err := s.Children(Context(t), root)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("children %v, want %v", got, want)
	}
	got, _ = s.Children(Context(t), root+"/c")
	if want := []string{"x", "y"}; !slices.Equal(got, want) {
		t.Fatalf("children of c %v, want %v", got, want)
	}
	got, err = s.Children(Context(t), root+"/nothing")
	if err != nil || len(got) != 0 {
		t.Fatalf("children of absent key: %v, %v", got, err)
	}
}

func testDelete(t *testing.T, open Opener, root string) {
	s := openClosed(t, open)
	ctx := Context(t)
	if err := s.Commit(ctx, store.Delete(root+"/absent")); err != nil {
		t.Fatalf("delete of an absent key: %v", err)
	}
	mustPut(t, s, root+"/p", "parent")
	mustPut(t, s, root+"/p/c", "child")
	if err := s.Commit(ctx, store.Delete(root+"/p")); err != nil {
		t.Fatal(err)
	}
	wantNotFound(t, s, root+"/p")
	if it := mustGet(t, s, root+"/p/c"); string(it.Value) != "child" {
		t.Fatalf("child lost with its parent's value: %q", it.Value)
	}
	if err := s.Commit(ctx, store.Delete(root+"/p/c")); err != nil {
		t.Fatal(err)
	}
	// Once the last descendant is gone, the parent is no child any more.
	got, _ := s.Children(ctx, root)
	if len(got) != 0 {
		t.Fatalf("children after deleting everything: %v", got)
	}
}

func testDeleteTree(t *testing.T, open Opener, root string) {
	s := openClosed(t, open)
	ctx := Context(t)
	for i := range 250 { // more than one delete batch
		mustPut(t, s, fmt.Sprintf("%s/t/n%03d/leaf", root, i), "x")
	}
	mustPut(t, s, root+"/t", "value of the top")
	mustPut(t, s, root+"/keep", "k")
	if err := store.DeleteTree(ctx, s, root+"/t"); err != nil {
		t.Fatal(err)
	}
	wantNotFound(t, s, root+"/t")
	wantNotFound(t, s, root+"/t/n007/leaf")
	if got, _ := s.Children(ctx, root); !slices.Equal(got, []string{"keep"}) {
		t.Fatalf("children after DeleteTree: %v", got)
	}
	if err := store.DeleteTree(ctx, s, root+"/t"); err != nil {
		t.Fatalf("DeleteTree of an absent tree: %v", err)
	}
}

func testCommitAtomic(t *testing.T, open Opener, root string) {
	s := openClosed(t, open)
	ctx := Context(t)
	mustPut(t, s, root+"/v", "1")
	v := mustGet(t, s, root+"/v").Version
	err := s.Commit(ctx,
		store.Put(root+"/new/a", []byte("a")),
		store.Put(root+"/v", []byte("2")),
		store.IfVersion(root+"/v", v+12345), // wrong version
		store.Put(root+"/new/b", []byte("b")))
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("commit with a failing condition: %v, want ErrConflict", err)
	}
	wantNotFound(t, s, root+"/new/a")
	wantNotFound(t, s, root+"/new/b")
	if it := mustGet(t, s, root+"/v"); string(it.Value) != "1" {
		t.Fatalf("failed commit changed v to %q", it.Value)
	}
	err = s.Commit(ctx,
		store.IfVersion(root+"/v", v),
		store.Put(root+"/new/a", []byte("a")),
		store.Delete(root+"/v"),
		store.Put(root+"/new/b", []byte("b")))
	if err != nil {
		t.Fatal(err)
	}
	mustGet(t, s, root+"/new/a")
	mustGet(t, s, root+"/new/b")
	wantNotFound(t, s, root+"/v")
}

func testConditions(t *testing.T, open Opener, root string) {
	s := openClosed(t, open)
	ctx := Context(t)
	k := root + "/k"
	if err := s.Commit(ctx, store.IfAbsent(k), store.Put(k, []byte("first"))); err != nil {
		t.Fatalf("create of an absent key: %v", err)
	}
	if err := s.Commit(ctx, store.IfAbsent(k), store.Put(k, []byte("second"))); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second create: %v, want ErrConflict", err)
	}
	it := mustGet(t, s, k)
	mustPut(t, s, k, "changed")
	if err := s.Commit(ctx, store.IfVersion(k, it.Version), store.Put(k, []byte("stale"))); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("put at a stale version: %v, want ErrConflict", err)
	}
	// A deleted and re-created key does not get its old version back.
	if err := s.Commit(ctx, store.Delete(k)); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, k, "first")
	if err := s.Commit(ctx, store.IfVersion(k, it.Version), store.Put(k, []byte("aba"))); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("put at the version of a deleted incarnation: %v, want ErrConflict", err)
	}
	if err := s.Commit(ctx, store.IfVersion(root+"/absent", 7)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("version check of an absent key: %v, want ErrConflict", err)
	}
	// A key that only exists as a parent counts as absent.
	mustPut(t, s, root+"/dir/child", "c")
	if err := s.Commit(ctx, store.IfAbsent(root+"/dir"), store.Put(root+"/dir", []byte("d"))); err != nil {
		t.Fatalf("create of a parent-only key: %v", err)
	}
}

func testValueLimit(t *testing.T, open Opener, root string) {
	s := openClosed(t, open)
	ctx := Context(t)
	max := s.MaxValueSize()
	if max < 512<<10 {
		t.Fatalf("MaxValueSize %d is below 512 KiB", max)
	}
	big := bytes.Repeat([]byte{0xa5}, max)
	big[0], big[max-1] = 1, 2
	// The declared limit must hold against the real server's request limit.
	if err := s.Commit(ctx, store.Put(root+"/big", big)); err != nil {
		t.Fatalf("put of MaxValueSize bytes: %v", err)
	}
	if it := mustGet(t, s, root+"/big"); !bytes.Equal(it.Value, big) {
		t.Fatalf("big value read back with %d bytes", len(it.Value))
	}
	if err := s.Commit(ctx, store.Put(root+"/huge", append(big, 0))); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("put of MaxValueSize+1 bytes: %v, want ErrTooLarge", err)
	}
	half := big[:max/2+1]
	if err := s.Commit(ctx, store.Put(root+"/h1", half), store.Put(root+"/h2", half)); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("commit of more than MaxValueSize in total: %v, want ErrTooLarge", err)
	}
	// The connection is still usable after a refused request.
	mustPut(t, s, root+"/after", "ok")
}

// waitNotified waits up to 10 s for a notification.
func waitNotified(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatalf("%s: watch channel closed", what)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no notification within 10 s", what)
	}
}

func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		case <-time.After(200 * time.Millisecond):
			return
		}
	}
}

func testWatch(t *testing.T, open Opener, root string) {
	s, writer := openClosed(t, open), openClosed(t, open)
	ctx, cancel := context.WithCancel(Context(t))
	k := root + "/watched"
	ch := s.Watch(ctx, k)
	waitNotified(t, ch, "initial")
	drain(ch)
	mustPut(t, writer, k, "1") // creation of an absent key
	waitNotified(t, ch, "create")
	drain(ch)
	mustPut(t, writer, k, "2")
	waitNotified(t, ch, "change")
	drain(ch)
	mustPut(t, writer, root+"/other", "x") // unrelated key: no notification
	select {
	case <-ch:
		t.Fatal("notified for an unrelated key")
	case <-time.After(300 * time.Millisecond):
	}
	if err := writer.Commit(Context(t), store.Delete(k)); err != nil {
		t.Fatal(err)
	}
	waitNotified(t, ch, "delete")
	cancel()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("watch channel not closed after cancel")
		}
	}
}

func campaignAsync(s store.Store, ctx context.Context, key, id string) <-chan store.Leadership {
	ch := make(chan store.Leadership, 1)
	go func() {
		l, err := s.Campaign(ctx, key, id)
		if err != nil {
			close(ch)
			return
		}
		ch <- l
	}()
	return ch
}

func testElection(t *testing.T, open Opener, root string) {
	a, b := openClosed(t, open), openClosed(t, open)
	ctx := Context(t)
	key := root + "/leader"
	if _, err := a.Leader(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("leader before any campaign: %v, want ErrNotFound", err)
	}
	la, err := a.Campaign(ctx, key, "ctl-a")
	if err != nil {
		t.Fatal(err)
	}
	if id, err := b.Leader(ctx, key); err != nil || id != "ctl-a" {
		t.Fatalf("leader = %q, %v", id, err)
	}
	bWins := campaignAsync(b, ctx, key, "ctl-b")
	select {
	case <-bWins:
		t.Fatal("second candidate won while the first leads")
	case <-time.After(500 * time.Millisecond):
	}
	if err := a.Commit(ctx, la.Fence(), store.Put(root+"/data", []byte("a"))); err != nil {
		t.Fatalf("leader's fenced write: %v", err)
	}
	if err := la.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-la.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("Lost not closed after Resign")
	}
	var lb store.Leadership
	select {
	case lb = <-bWins:
		if lb == nil {
			t.Fatal("second campaign failed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("second candidate did not win after the first resigned")
	}
	if id, err := a.Leader(ctx, key); err != nil || id != "ctl-b" {
		t.Fatalf("leader = %q, %v; want ctl-b", id, err)
	}
	if err := a.Commit(ctx, la.Fence(), store.Put(root+"/data", []byte("stale"))); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("write with the old leader's fence: %v, want ErrConflict", err)
	}
	if err := b.Commit(ctx, lb.Fence(), store.Put(root+"/data", []byte("b"))); err != nil {
		t.Fatal(err)
	}
	if it := mustGet(t, a, root+"/data"); string(it.Value) != "b" {
		t.Fatalf("data = %q", it.Value)
	}
	// A campaign given up by its context leaves no candidate behind.
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := a.Campaign(cctx, key, "ctl-late"); err == nil {
		t.Fatal("campaign won while another leads")
	}
	if err := lb.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if id, err := a.Leader(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("leader after everyone left: %q, %v", id, err)
	}
}

// testElectionAfterClose: a leader whose connection goes away loses the
// leadership within the backend's session/lease timeout, and its fence
// stops working.
func testElectionAfterClose(t *testing.T, open Opener, root string) {
	a, b := open(t), openClosed(t, open)
	ctx := Context(t)
	key := root + "/leader"
	la, err := a.Campaign(ctx, key, "ctl-a")
	if err != nil {
		t.Fatal(err)
	}
	fence := la.Fence()
	bWins := campaignAsync(b, ctx, key, "ctl-b")
	a.Close()
	select {
	case lb := <-bWins:
		if lb == nil {
			t.Fatal("campaign failed")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no new leader 30 s after the leader's connection closed")
	}
	if err := b.Commit(ctx, fence, store.Put(root+"/x", nil)); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("write with a closed leader's fence: %v, want ErrConflict", err)
	}
}

func testFencedStore(t *testing.T, open Opener, root string) {
	a, b := openClosed(t, open), openClosed(t, open)
	ctx := Context(t)
	la, err := a.Campaign(ctx, root+"/leader", "a")
	if err != nil {
		t.Fatal(err)
	}
	fa := store.Fenced(a, la)
	if err := fa.Commit(ctx, store.Put(root+"/x", []byte("1"))); err != nil {
		t.Fatal(err)
	}
	if err := la.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	lb, err := b.Campaign(ctx, root+"/leader", "b")
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Resign(ctx)
	if err := fa.Commit(ctx, store.Put(root+"/x", []byte("2"))); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("fenced write after losing the leadership: %v, want ErrConflict", err)
	}
	if err := store.DeleteTree(ctx, fa, root+"/x"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("fenced DeleteTree after losing the leadership: %v", err)
	}
	if it := mustGet(t, b, root+"/x"); string(it.Value) != "1" {
		t.Fatalf("x = %q", it.Value)
	}
}
