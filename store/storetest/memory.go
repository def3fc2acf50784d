package storetest

import (
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

func memWrite(t *testing.T, ns, key, value string, merge bool, at, expires time.Time) engine.MemoryWrite {
	return engine.MemoryWrite{Namespace: ns, Key: key, Value: Doc(t, value), Merge: merge, At: at, ExpiresAt: expires, Execution: "e1"}
}

// readMemory returns "key=value" for each live key of keys, in order.
func readMemory(t *testing.T, s store.Store, ns string, now time.Time, keys ...string) []string {
	t.Helper()
	got, err := s.ReadMemory(t.Context(), ns, keys, now)
	if err != nil {
		t.Fatalf("ReadMemory(%s): %v", ns, err)
	}
	var out []string
	for _, k := range keys {
		if e, ok := got[k]; ok {
			if e.Namespace != ns || e.Key != k {
				t.Errorf("entry %s/%s read as %s/%s", ns, k, e.Namespace, e.Key)
			}
			out = append(out, k+"="+text(e.Value))
		}
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func testMemory(t *testing.T, s store.Store) {
	create(t, s, newExecution(t, "e1"))
	c := step(t, "e1", 1)
	c.Memory = []engine.MemoryWrite{
		memWrite(t, "users/42", "profile", exactDoc, false, t0, time.Time{}),
		memWrite(t, "users/42", "seen", `1`, false, t0, at(time.Hour)),
		memWrite(t, "users/7", "profile", `{"name":"x"}`, false, t0, time.Time{}),
		memWrite(t, "users/4", "profile", `"prefix of users/42 must not match"`, false, t0, time.Time{}),
	}
	value := c.Memory[0].Value
	commit(t, s, c)
	// The store keeps what it was given, not the engine's values.
	value.(map[string]any)["extra"] = true

	if got, want := readMemory(t, s, "users/42", t0, "profile", "seen", "missing"), []string{"profile=" + text(Doc(t, exactDoc)), "seen=1"}; !equalStrings(got, want) {
		t.Errorf("ReadMemory = %q, want %q", got, want)
	}
	got, err := s.ReadMemory(t.Context(), "users/42", []string{"seen"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	e := got["seen"]
	if !e.UpdatedAt.Equal(t0) || !e.ExpiresAt.Equal(at(time.Hour)) || e.Execution != "e1" {
		t.Errorf("entry seen = %+v, want written at t0 by e1, expiring after an hour", e)
	}
	if got := readMemory(t, s, "users/42", at(time.Hour), "seen"); got != nil {
		t.Errorf("an expired key reads %q, want nothing", got)
	}

	list, err := s.ListMemory(t.Context(), "users/4", t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Key != "profile" || list[0].Namespace != "users/4" {
		t.Errorf("ListMemory(users/4) = %+v, want users/4's profile only", list)
	}
	all, err := s.ListMemory(t.Context(), "", t0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range all {
		names = append(names, e.Namespace+"/"+e.Key)
	}
	if want := []string{"users/4/profile", "users/42/profile", "users/42/seen", "users/7/profile"}; !equalStrings(names, want) {
		t.Errorf("ListMemory() = %q, want %q", names, want)
	}

	// A new value replaces the old one and its expiry; GC removes only
	// what expired.
	commit(t, s, &engine.Commit{Execution: "e1", Seq: 2, Memory: []engine.MemoryWrite{
		memWrite(t, "users/7", "profile", `{"name":"y"}`, false, at(time.Minute), at(2*time.Hour)),
	}})
	gc(t, s, at(90*time.Minute), store.GCReport{Memory: 1})
	if got := readMemory(t, s, "users/42", t0, "profile", "seen"); !equalStrings(got, []string{"profile=" + text(Doc(t, exactDoc))}) {
		t.Errorf("after GC: %q", got)
	}
	if got := readMemory(t, s, "users/7", at(90*time.Minute), "profile"); !equalStrings(got, []string{`profile={"name":"y"}`}) {
		t.Errorf("after GC: %q", got)
	}
	gc(t, s, at(2*time.Hour), store.GCReport{Memory: 1})
	gc(t, s, at(3*time.Hour), store.GCReport{})
}

func testMemoryMerge(t *testing.T, s store.Store) {
	create(t, s, newExecution(t, "e1"))
	commit(t, s, &engine.Commit{Execution: "e1", Seq: 1, Memory: []engine.MemoryWrite{
		memWrite(t, "n", "h", `{"log":[1],"a":{"x":1}}`, true, t0, time.Time{}),
		// Writes of one commit apply in order.
		memWrite(t, "n", "h", `{"log":[2],"a":{"y":2}}`, true, t0, time.Time{}),
		memWrite(t, "n", "short", `[1]`, false, t0, at(time.Minute)),
	}})
	commit(t, s, &engine.Commit{Execution: "e1", Seq: 2, Memory: []engine.MemoryWrite{
		memWrite(t, "n", "h", `{"log":[3.0]}`, true, at(time.Second), time.Time{}),
		// An expired value is not merged into.
		memWrite(t, "n", "short", `[2]`, true, at(time.Minute), time.Time{}),
	}})
	want := []string{`h={"a":{"x":1,"y":2},"log":[1,2,3.0]}`, `short=[2]`}
	if got := readMemory(t, s, "n", at(time.Hour), "h", "short"); !equalStrings(got, want) {
		t.Errorf("merged: %q, want %q", got, want)
	}
}

func testMemoryFailedCommit(t *testing.T, s store.Store) {
	create(t, s, newExecution(t, "e1"))
	// A commit for an unknown execution fails whole: its memory writes too.
	err := s.Commit(t.Context(), &engine.Commit{Execution: "nobody", Seq: 1, Memory: []engine.MemoryWrite{
		memWrite(t, "n", "k", `1`, false, t0, time.Time{}),
	}})
	if err == nil {
		t.Fatal("commit for an unknown execution succeeded")
	}
	err = s.Commit(t.Context(), &engine.Commit{Execution: "e1", Seq: 1, Memory: []engine.MemoryWrite{
		memWrite(t, "bad\x00name", "k", `1`, false, t0, time.Time{}),
	}})
	if err == nil {
		t.Error("a namespace with NUL was accepted")
	}
	if got := readMemory(t, s, "n", t0, "k"); got != nil {
		t.Errorf("a failed commit wrote %q", got)
	}
}

func testMemoryDelete(t *testing.T, s store.Store) {
	create(t, s, newExecution(t, "e1"))
	commit(t, s, &engine.Commit{Execution: "e1", Seq: 1, Memory: []engine.MemoryWrite{
		memWrite(t, "n", "a", `1`, false, t0, at(time.Hour)),
		memWrite(t, "n", "b", `2`, false, t0, time.Time{}),
	}})
	commit(t, s, &engine.Commit{Execution: "e1", Seq: 2, Memory: []engine.MemoryWrite{
		{Namespace: "n", Key: "a", Delete: true, At: at(time.Minute)},
		{Namespace: "n", Key: "b", Delete: true, At: at(time.Minute)},
		// A merge after a delete in the same commit starts afresh.
		memWrite(t, "n", "b", `[3]`, true, at(time.Minute), time.Time{}),
	}})
	if got := readMemory(t, s, "n", at(time.Minute), "a", "b"); !equalStrings(got, []string{"b=[3]"}) {
		t.Errorf("after deletes: %q, want b=[3] only", got)
	}
	// The deleted key's expiry went with it.
	gc(t, s, at(2*time.Hour), store.GCReport{})
}

func testNamespaces(t *testing.T, s store.Store) {
	create(t, s, newExecution(t, "e1"), newExecution(t, "e2"))
	commit(t, s, &engine.Commit{Execution: "e1", Seq: 1, AddNamespaces: []string{"users/7", "team"}})
	commit(t, s, &engine.Commit{Execution: "e1", Seq: 2, AddNamespaces: []string{"team", "a"}})
	commit(t, s, &engine.Commit{Execution: "e2", Seq: 1, AddNamespaces: []string{"other"}})
	if got := load(t, s, "e1").Progress.Namespaces; !equalStrings(got, []string{"a", "team", "users/7"}) {
		t.Errorf("e1's namespaces = %q, want a, team, users/7", got)
	}
	if got := load(t, s, "e2").Progress.Namespaces; !equalStrings(got, []string{"other"}) {
		t.Errorf("e2's namespaces = %q, want other", got)
	}
	err := s.Commit(t.Context(), &engine.Commit{Execution: "e1", Seq: 3, AddNamespaces: []string{"bad\x00"}})
	if err == nil {
		t.Error("a namespace with NUL was accepted")
	}
}
