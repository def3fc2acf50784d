package engine_test

import (
	"errors"
	"testing"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

func TestPatchApply(t *testing.T) {
	doc := `{"a":{"b":1,"c":[1,2,3]},"x/y":"slash","m~n":"tilde","": "empty"}`
	tests := []struct {
		name, patch, want string
	}{
		{"add member", `[{"op":"add","path":"/a/d","value":{"e":null}}]`, `{"a":{"b":1,"c":[1,2,3],"d":{"e":null}},"x/y":"slash","m~n":"tilde","":"empty"}`},
		{"add replaces member", `[{"op":"add","path":"/a/b","value":2}]`, `{"a":{"b":2,"c":[1,2,3]},"x/y":"slash","m~n":"tilde","":"empty"}`},
		{"add inserts", `[{"op":"add","path":"/a/c/1","value":9}]`, `{"a":{"b":1,"c":[1,9,2,3]},"x/y":"slash","m~n":"tilde","":"empty"}`},
		{"add at the end index", `[{"op":"add","path":"/a/c/3","value":9}]`, `{"a":{"b":1,"c":[1,2,3,9]},"x/y":"slash","m~n":"tilde","":"empty"}`},
		{"add appends with -", `[{"op":"add","path":"/a/c/-","value":9}]`, `{"a":{"b":1,"c":[1,2,3,9]},"x/y":"slash","m~n":"tilde","":"empty"}`},
		{"add whole document", `[{"op":"add","path":"","value":[1]}]`, `[1]`},
		{"remove member", `[{"op":"remove","path":"/a/b"}]`, `{"a":{"c":[1,2,3]},"x/y":"slash","m~n":"tilde","":"empty"}`},
		{"remove element", `[{"op":"remove","path":"/a/c/0"}]`, `{"a":{"b":1,"c":[2,3]},"x/y":"slash","m~n":"tilde","":"empty"}`},
		{"replace", `[{"op":"replace","path":"/a/c","value":"now"}]`, `{"a":{"b":1,"c":"now"},"x/y":"slash","m~n":"tilde","":"empty"}`},
		{"replace whole document", `[{"op":"replace","path":"","value":3}]`, `3`},
		{"escaped ~1", `[{"op":"replace","path":"/x~1y","value":1}]`, `{"a":{"b":1,"c":[1,2,3]},"x/y":1,"m~n":"tilde","":"empty"}`},
		{"escaped ~0", `[{"op":"remove","path":"/m~0n"}]`, `{"a":{"b":1,"c":[1,2,3]},"x/y":"slash","":"empty"}`},
		{"empty member name", `[{"op":"replace","path":"/","value":"full"}]`, `{"a":{"b":1,"c":[1,2,3]},"x/y":"slash","m~n":"tilde","":"full"}`},
		{"move", `[{"op":"move","from":"/a/b","path":"/b"}]`, `{"a":{"c":[1,2,3]},"b":1,"x/y":"slash","m~n":"tilde","":"empty"}`},
		{"move element", `[{"op":"move","from":"/a/c/0","path":"/a/c/-"}]`, `{"a":{"b":1,"c":[2,3,1]},"x/y":"slash","m~n":"tilde","":"empty"}`},
		{"move onto itself", `[{"op":"move","from":"/a","path":"/a"}]`, doc},
		{"copy", `[{"op":"copy","from":"/a/c","path":"/c"}]`, `{"a":{"b":1,"c":[1,2,3]},"c":[1,2,3],"x/y":"slash","m~n":"tilde","":"empty"}`},
		{"test passes", `[{"op":"test","path":"/a","value":{"c":[1,2,3],"b":1.0}},{"op":"remove","path":"/a"}]`, `{"x/y":"slash","m~n":"tilde","":"empty"}`},
		{"unknown members ignored", `[{"op":"remove","path":"/a","value":1,"from":"/x","note":"n"}]`, `{"x/y":"slash","m~n":"tilde","":"empty"}`},
		{"empty patch", `[]`, doc},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := mustJSON(t, doc)
			before := mustJSON(t, doc)
			p, err := engine.ParsePatch(mustJSON(t, tc.patch))
			if err != nil {
				t.Fatalf("ParsePatch: %v", err)
			}
			got, err := p.Apply(d)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if want := mustJSON(t, tc.want); !jsonvalue.Equal(got, want) {
				t.Errorf("Apply = %s, want %s", marshal(t, got), tc.want)
			}
			if !jsonvalue.Equal(d, before) {
				t.Errorf("Apply modified its input: %s", marshal(t, d))
			}
		})
	}
}

func TestPatchApplyRefuses(t *testing.T) {
	doc := `{"a":{"b":1,"c":[1,2,3]},"s":"text"}`
	tests := []struct {
		name, patch string
		index       int
		member      string
		test        bool
	}{
		{"test fails", `[{"op":"test","path":"/a/b","value":2}]`, 0, "value", true},
		{"test of a missing member", `[{"op":"test","path":"/a/z","value":2}]`, 0, "path", false},
		{"test number is not string", `[{"op":"add","path":"/n","value":1},{"op":"test","path":"/n","value":"1"}]`, 1, "value", true},
		{"add under a missing parent", `[{"op":"add","path":"/z/y","value":1}]`, 0, "path", false},
		{"add past the end", `[{"op":"add","path":"/a/c/4","value":1}]`, 0, "path", false},
		{"add with a leading zero", `[{"op":"add","path":"/a/c/01","value":1}]`, 0, "path", false},
		{"add into a string", `[{"op":"add","path":"/s/x","value":1}]`, 0, "path", false},
		{"remove missing", `[{"op":"remove","path":"/a/z"}]`, 0, "path", false},
		{"remove -", `[{"op":"remove","path":"/a/c/-"}]`, 0, "path", false},
		{"remove the document", `[{"op":"remove","path":""}]`, 0, "path", false},
		{"replace missing", `[{"op":"replace","path":"/z","value":1}]`, 0, "path", false},
		{"replace element out of range", `[{"op":"replace","path":"/a/c/3","value":1}]`, 0, "path", false},
		{"move from missing", `[{"op":"remove","path":"/s"},{"op":"move","from":"/s","path":"/t"}]`, 1, "from", false},
		{"move into its child", `[{"op":"move","from":"/a","path":"/a/b/x"}]`, 0, "path", false},
		{"copy to a missing parent", `[{"op":"copy","from":"/a","path":"/q/r"}]`, 0, "path", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := mustJSON(t, doc)
			p, err := engine.ParsePatch(mustJSON(t, tc.patch))
			if err != nil {
				t.Fatalf("ParsePatch: %v", err)
			}
			got, err := p.Apply(d)
			var pe *engine.PatchError
			if !errors.As(err, &pe) {
				t.Fatalf("Apply = %v, %v; want a *PatchError", got, err)
			}
			if pe.Index != tc.index || pe.Member != tc.member {
				t.Errorf("error at %d/%q (%v), want %d/%q", pe.Index, pe.Member, err, tc.index, tc.member)
			}
			if errors.Is(err, engine.ErrPatchTest) != tc.test {
				t.Errorf("errors.Is(%v, ErrPatchTest) = %v, want %v", err, !tc.test, tc.test)
			}
			if !jsonvalue.Equal(d, mustJSON(t, doc)) {
				t.Errorf("a refused patch modified the document: %s", marshal(t, d))
			}
		})
	}
}

func TestParsePatchRefuses(t *testing.T) {
	tests := []struct {
		name, patch string
		pointer     string
	}{
		{"not an array", `{"op":"add"}`, ""},
		{"operation not an object", `[{"op":"remove","path":"/a"}, 3]`, "/1"},
		{"op missing", `[{"path":"/a"}]`, "/0/op"},
		{"op not a string", `[{"op":1,"path":"/a"}]`, "/0/op"},
		{"unknown op", `[{"op":"merge","path":"/a"}]`, "/0/op"},
		{"path missing", `[{"op":"remove"}]`, "/0/path"},
		{"path without slash", `[{"op":"remove","path":"a"}]`, "/0/path"},
		{"bad escape", `[{"op":"remove","path":"/a~2"}]`, "/0/path"},
		{"escape at the end", `[{"op":"remove","path":"/a~"}]`, "/0/path"},
		{"value missing", `[{"op":"remove","path":"/a"},{"op":"add","path":"/a"}]`, "/1/value"},
		{"test without value", `[{"op":"test","path":"/a"}]`, "/0/value"},
		{"from missing", `[{"op":"copy","path":"/a"}]`, "/0/from"},
		{"from malformed", `[{"op":"move","path":"/a","from":"b"}]`, "/0/from"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := engine.ParsePatch(mustJSON(t, tc.patch))
			var pe *engine.PatchError
			if !errors.As(err, &pe) {
				t.Fatalf("ParsePatch = %v, %v; want a *PatchError", p, err)
			}
			if got := pe.Pointer(); got != tc.pointer {
				t.Errorf("Pointer() = %q (%v), want %q", got, err, tc.pointer)
			}
		})
	}
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
