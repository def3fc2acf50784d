package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// applyPatch applies an RFC 6902 patch of add, replace and remove
// operations to doc (which it does not change).
func applyPatch(doc any, ops []api.PatchOp) (any, error) {
	for i, op := range ops {
		var v any
		if op.Op != "remove" {
			var err error
			if v, err = jsonvalue.Decode(op.Value); err != nil {
				return nil, fmt.Errorf("op %d: value: %v", i, err)
			}
		}
		tokens, err := parsePointer(op.Path)
		if err != nil {
			return nil, fmt.Errorf("op %d: %v", i, err)
		}
		if doc, err = applyOp(doc, tokens, op.Op, v); err != nil {
			return nil, fmt.Errorf("op %d (%s %s): %v", i, op.Op, op.Path, err)
		}
	}
	return doc, nil
}

func parsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("pointer %q does not start with /", p)
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		// RFC 6901: "~1" to "/" first, then "~0" to "~".
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens, nil
}

func applyOp(doc any, tokens []string, op string, v any) (any, error) {
	if len(tokens) == 0 {
		if op == "remove" {
			return nil, errors.New("remove of the whole document")
		}
		return v, nil
	}
	last := len(tokens) == 1
	switch d := doc.(type) {
	case map[string]any:
		k := tokens[0]
		old, ok := d[k]
		c := maps.Clone(d)
		switch {
		case !last && !ok:
			return nil, fmt.Errorf("no member %q", k)
		case !last:
			nv, err := applyOp(old, tokens[1:], op, v)
			if err != nil {
				return nil, err
			}
			c[k] = nv
		case op == "add":
			c[k] = v
		case !ok:
			return nil, fmt.Errorf("%s of a missing member %q", op, k)
		case op == "replace":
			c[k] = v
		case op == "remove":
			delete(c, k)
		default:
			return nil, fmt.Errorf("unknown op %q", op)
		}
		return c, nil
	case []any:
		i, err := strconv.Atoi(tokens[0])
		if err != nil || i < 0 || strconv.Itoa(i) != tokens[0] {
			return nil, fmt.Errorf("bad index %q", tokens[0])
		}
		c := slices.Clone(d)
		switch {
		case !last && i >= len(d):
			return nil, fmt.Errorf("index %d out of %d", i, len(d))
		case !last:
			nv, err := applyOp(d[i], tokens[1:], op, v)
			if err != nil {
				return nil, err
			}
			c[i] = nv
		case op == "add" && i <= len(d):
			c = slices.Insert(c, i, v)
		case i >= len(d):
			return nil, fmt.Errorf("%s at index %d out of %d", op, i, len(d))
		case op == "replace":
			c[i] = v
		case op == "remove":
			c = slices.Delete(c, i, i+1)
		default:
			return nil, fmt.Errorf("unknown op %q at index %d", op, i)
		}
		return c, nil
	}
	return nil, fmt.Errorf("%q into a %s", tokens[0], jsonvalue.TypeName(doc))
}

func TestJSONPatch(t *testing.T) {
	for _, tc := range []struct {
		name, a, b string
		want       string // the patch; empty: only check it applies
	}{
		{"equal", `{"a":[1,{"b":null}]}`, `{"a":[1,{"b":null}]}`, `[]`},
		{"root scalar", `1`, `"x"`, `[{"op":"replace","path":"","value":"x"}]`},
		{"root object to array", `{"a":1}`, `[1]`, `[{"op":"replace","path":"","value":[1]}]`},
		{"root to null", `{"a":1}`, `null`, `[{"op":"replace","path":"","value":null}]`},
		{"members", `{"keep":1,"gone":2,"change":{"x":1}}`, `{"keep":1,"change":{"x":2},"new":null}`,
			`[{"op":"replace","path":"/change/x","value":2},{"op":"remove","path":"/gone"},{"op":"add","path":"/new","value":null}]`},
		{"escaped keys", `{"a/b":1,"m~n":1,"~1":1,"":1}`, `{"a/b":2,"m~n":2,"~1":2,"":2}`,
			`[{"op":"replace","path":"/","value":2},{"op":"replace","path":"/a~1b","value":2},{"op":"replace","path":"/m~0n","value":2},{"op":"replace","path":"/~01","value":2}]`},
		{"nested escaped keys", `{"x/y":{"~":[1]}}`, `{"x/y":{"~":[1,2]}}`, `[{"op":"add","path":"/x~1y/~0/1","value":2}]`},
		{"array grows", `[1,2]`, `[1,3,4,5]`, `[{"op":"replace","path":"/1","value":3},{"op":"add","path":"/2","value":4},{"op":"add","path":"/3","value":5}]`},
		{"array shrinks", `[1,2,3,4]`, `[0,2]`, `[{"op":"replace","path":"/0","value":0},{"op":"remove","path":"/3"},{"op":"remove","path":"/2"}]`},
		{"array emptied", `{"l":[1,2]}`, `{"l":[]}`, `[{"op":"remove","path":"/l/1"},{"op":"remove","path":"/l/0"}]`},
		{"array of objects", `[{"a":1},{"b":[true]}]`, `[{"a":1,"c":"z"},{"b":[false,null]},[]]`, ""},
		{"types change", `{"a":{"b":1},"c":[1],"d":"s","e":true}`, `{"a":[1],"c":{"0":1},"d":1,"e":null}`, ""},
		{"numbers by value", `{"n":1}`, `{"n":1.0}`, `[]`},
		{"deep", `{"a":{"b":{"c":[{"d":1},{"e":[1,2,3]}]}},"f/g~h":[null]}`, `{"a":{"b":{"c":[{"d":2},{"e":[3]},{}]}},"f/g~h":[]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := jsonvalue.Decode([]byte(tc.a))
			if err != nil {
				t.Fatal(err)
			}
			b, err := jsonvalue.Decode([]byte(tc.b))
			if err != nil {
				t.Fatal(err)
			}
			patch := jsonPatch(a, b)
			got, err := json.Marshal(patch)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && string(got) != tc.want {
				t.Errorf("jsonPatch(%s, %s) = %s, want %s", tc.a, tc.b, got, tc.want)
			}
			applied, err := applyPatch(a, patch)
			if err != nil {
				t.Fatalf("applying %s to %s: %v", got, tc.a, err)
			}
			if !jsonvalue.Equal(applied, b) {
				out, _ := jsonvalue.Marshal(applied)
				t.Errorf("%s patched with %s = %s, want %s", tc.a, got, out, tc.b)
			}
			if !jsonvalue.Equal(a, mustDecode(t, tc.a)) {
				t.Errorf("jsonPatch or applyPatch changed its first document")
			}
		})
	}
}

func mustDecode(t *testing.T, s string) any {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkpointFlow writes agent memory, saves "one", changes the document
// (keys that need escaping) and the memory, saves "two" and ends.
const checkpointFlow = `{"StartAt":"Remember","States":{
	"Remember":{"Type":"Pass","Result":{"n":1},"ResultPath":"$.first","Memory":{"Namespace":"team","Write":[{"Key":"note","Value":"v1"}]},"Next":"One"},
	"One":{"Type":"Checkpoint","Name":"one","Next":"Change"},
	"Change":{"Type":"Pass","Parameters":{"first":{"n":2,"x/y":true},"tags~":["a"]},"Assign":{"changed":true},
		"Memory":{"Namespace":"team","Write":[{"Key":"note","Value":"v2"},{"Key":"extra","Value":[1],"Merge":true}]},"Next":"Two"},
	"Two":{"Type":"Checkpoint","Name":"two","Next":"Done"},
	"Done":{"Type":"Pass","End":true}}}`

// startCheckpointed runs checkpointFlow as id to its end.
func startCheckpointed(t *testing.T, ts *testServer, id string) {
	t.Helper()
	start := map[string]any{"definition": json.RawMessage(checkpointFlow), "input": json.RawMessage(`{"topic":"x"}`), "name": id}
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", start, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	ts.waitFor(t, id, func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
}

// events are an execution's history event types, in order.
func (ts *testServer) events(t *testing.T, id string) []string {
	t.Helper()
	var h api.History
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions/"+id+"/history?limit=1000", nil, &h); code != 200 {
		t.Fatalf("history of %s: %d %s", id, code, body)
	}
	var out []string
	for _, e := range h.Events {
		out = append(out, e.Type)
	}
	return out
}

// memoryOf is the namespace's entries, by key, as JSON text.
func (ts *testServer) memoryOf(t *testing.T, ns string) map[string]string {
	t.Helper()
	var l api.MemoryEntryList
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/memory/"+ns, nil, &l); code != 200 {
		t.Fatalf("memory %s: %d %s", ns, code, body)
	}
	out := map[string]string{}
	for _, e := range l.Entries {
		out[e.Key] = string(e.Value)
	}
	return out
}

func TestCheckpointsRollbackAndFork(t *testing.T) {
	ts := newTestServer(t)
	startCheckpointed(t, ts, "ck")

	var list api.CheckpointList
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions/ck/checkpoints", nil, &list); code != 200 {
		t.Fatalf("list: %d %s", code, body)
	}
	if len(list.Checkpoints) != 2 || list.Execution != "ck" {
		t.Fatalf("list = %+v, want the execution's 2 checkpoints", list)
	}
	one, two := list.Checkpoints[0], list.Checkpoints[1]
	if one.Name != "one" || one.State != "One" || one.Next != "Change" || two.Name != "two" || two.Next != "Done" {
		t.Errorf("checkpoints %+v, %+v: want one (One → Change), then two (Two → Done)", one, two)
	}
	if one.Document != nil || one.CreatedAt.IsZero() || one.ExpiresAt == nil || !one.ExpiresAt.After(one.CreatedAt) || one.Expired {
		t.Errorf("listed checkpoint %+v: want no document, a creation time, a later expiry (the default TTL)", one)
	}

	var cp api.Checkpoint
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions/ck/checkpoints/two", nil, &cp); code != 200 {
		t.Fatalf("get two: %d %s", code, body)
	}
	if !jsonvalue.Equal(mustDecode(t, string(cp.Document)), mustDecode(t, `{"first":{"n":2,"x/y":true},"tags~":["a"]}`)) {
		t.Errorf("two's document = %s", cp.Document)
	}
	if !jsonvalue.Equal(mustDecode(t, string(cp.Variables)), mustDecode(t, `{"changed":true}`)) {
		t.Errorf("two's variables = %s, want {\"changed\":true}", cp.Variables)
	}
	var first api.Checkpoint
	ts.call(t, RoleViewer, "GET", "/v1/executions/ck/checkpoints/one", nil, &first)
	if first.Variables != nil {
		t.Errorf("one's variables = %s, want none", first.Variables)
	}

	// The diff is a JSON Patch that turns one's document into two's.
	req, _ := http.NewRequest("GET", ts.URL+"/v1/executions/ck/checkpoints/one/diff?to=two", nil)
	req.Header.Set("Authorization", "Bearer "+ts.tokens[RoleViewer])
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var patch []api.PatchOp
	err = json.NewDecoder(resp.Body).Decode(&patch)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json-patch+json" {
		t.Fatalf("diff: %d %s %v", resp.StatusCode, resp.Header.Get("Content-Type"), err)
	}
	got, _ := json.Marshal(patch)
	want := `[{"op":"replace","path":"/first/n","value":2},{"op":"add","path":"/first/x~1y","value":true},{"op":"remove","path":"/topic"},{"op":"add","path":"/tags~0","value":["a"]}]`
	if string(got) != want {
		t.Errorf("diff one → two = %s, want %s", got, want)
	}
	applied, err := applyPatch(mustDecode(t, string(first.Document)), patch)
	if err != nil || !jsonvalue.Equal(applied, mustDecode(t, string(cp.Document))) {
		t.Errorf("one's document patched = %v, %v; want two's", applied, err)
	}
	var same []api.PatchOp
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions/ck/checkpoints/two/diff?to=two", nil, &same); code != 200 || len(same) != 0 {
		t.Errorf("diff two → two: %d %s, want []", code, body)
	}

	// Memory: the namespace and its entries.
	var nss api.MemoryNamespaceList
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/memory", nil, &nss); code != 200 || len(nss.Namespaces) != 1 {
		t.Fatalf("namespaces: %d %s", code, body)
	}
	if ns := nss.Namespaces[0]; ns.Namespace != "team" || ns.Keys != 2 || ns.UpdatedAt.IsZero() {
		t.Errorf("namespace %+v, want team with 2 keys", ns)
	}
	var entries api.MemoryEntryList
	ts.call(t, RoleViewer, "GET", "/v1/memory/team", nil, &entries)
	if len(entries.Entries) != 2 || entries.Entries[0].Key != "extra" || entries.Entries[0].Execution != "ck" || entries.Entries[1].Key != "note" {
		t.Errorf("entries %+v, want extra and note written by ck", entries)
	}
	if m := ts.memoryOf(t, "team"); m["note"] != `"v2"` || m["extra"] != `[1]` {
		t.Errorf("memory %v after the run", m)
	}

	// Rollback to one, memory too: extra is removed, then written afresh.
	var e api.Execution
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions/ck/rollback", map[string]any{"checkpoint": "one"}, &e); code != http.StatusAccepted || e.ID != "ck" {
		t.Fatalf("rollback: %d %s", code, body)
	}
	ts.waitFor(t, "ck", func(e api.Execution) bool {
		return e.Status == "SUCCEEDED" && slices.Contains(ts.events(t, "ck"), engine.EventExecutionRolledBack)
	})
	if m := ts.memoryOf(t, "team"); m["note"] != `"v2"` || m["extra"] != `[1]` {
		t.Errorf("memory %v after a rollback restoring it, want extra [1] (restored, then merged once)", m)
	}

	// Fork from one, the document only: the child writes extra over the
	// parent's.
	body, _ := json.Marshal(map[string]any{"checkpoint": "one", "restore": "document", "name": "ck-fork"})
	req, _ = http.NewRequest("POST", ts.URL+"/v1/executions/ck/fork", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+ts.tokens[RoleOperator])
	resp, err = ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var child api.Execution
	err = json.NewDecoder(resp.Body).Decode(&child)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated || child.ID != "ck-fork" || child.Parent != "ck" {
		t.Fatalf("fork: %d %+v %v; want 201 with ck-fork, parent ck", resp.StatusCode, child, err)
	}
	if loc := resp.Header.Get("Location"); loc != "/v1/executions/ck-fork" {
		t.Errorf("fork Location %q", loc)
	}
	child = ts.waitFor(t, "ck-fork", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	if child.Parent != "ck" || !jsonvalue.Equal(mustDecode(t, string(child.Output)), mustDecode(t, string(cp.Document))) {
		t.Errorf("fork %+v: want parent ck and two's document as output", child)
	}
	if m := ts.memoryOf(t, "team"); m["extra"] != `[1,1]` {
		t.Errorf("memory %v after a fork keeping it, want extra [1,1]", m)
	}
	if !slices.Contains(ts.events(t, "ck"), engine.EventForkedTo) {
		t.Errorf("the parent's history %v does not say it was forked", ts.events(t, "ck"))
	}
	// A fork without a name gets a new id.
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions/ck/fork", map[string]any{"checkpoint": "two"}, &child); code != http.StatusCreated || child.ID == "" || child.Parent != "ck" {
		t.Errorf("fork without a name: %d %s", code, body)
	} else {
		ts.waitFor(t, child.ID, func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	}
}

// TestCheckpointRefusals: each bad request is a problem naming what is at
// fault, and changes nothing.
func TestCheckpointRefusals(t *testing.T) {
	ts := newTestServer(t)
	startCheckpointed(t, ts, "ck")
	startCheckpointed(t, ts, "taken")
	long := strings.Repeat("n", maxExecutionID+1)
	for _, tc := range []struct {
		name         string
		method, path string
		body         any
		status       int
		pointer      string
		detail       string // in the problem's detail
	}{
		{"get unknown checkpoint", "GET", "/v1/executions/ck/checkpoints/three", nil, 404, "", "one, two"},
		{"checkpoints of unknown execution", "GET", "/v1/executions/none/checkpoints", nil, 404, "", ""},
		{"checkpoint of unknown execution", "GET", "/v1/executions/none/checkpoints/one", nil, 404, "", ""},
		{"diff without to", "GET", "/v1/executions/ck/checkpoints/one/diff", nil, 400, "", ""},
		{"diff to unknown", "GET", "/v1/executions/ck/checkpoints/one/diff?to=three", nil, 404, "", "one, two"},
		{"diff from unknown", "GET", "/v1/executions/ck/checkpoints/three/diff?to=one", nil, 404, "", "one, two"},
		{"rollback unknown checkpoint", "POST", "/v1/executions/ck/rollback", `{"checkpoint":"three"}`, 404, "/checkpoint", "one, two"},
		{"rollback unknown execution", "POST", "/v1/executions/none/rollback", `{"checkpoint":"one"}`, 404, "", ""},
		{"rollback bad restore", "POST", "/v1/executions/ck/rollback", `{"checkpoint":"one","restore":"all"}`, 400, "/restore", ""},
		{"rollback restore not a string", "POST", "/v1/executions/ck/rollback", `{"checkpoint":"one","restore":1}`, 400, "/restore", ""},
		{"rollback no checkpoint", "POST", "/v1/executions/ck/rollback", `{}`, 400, "/checkpoint", ""},
		{"rollback unknown field", "POST", "/v1/executions/ck/rollback", `{"checkpoint":"one","name":"x"}`, 400, "", ""},
		{"rollback not JSON", "POST", "/v1/executions/ck/rollback", `{"checkpoint":`, 400, "", ""},
		{"rollback memory of an ended execution", "POST", "/v1/executions/ck/rollback", `{"checkpoint":"one","restore":"memory"}`, 409, "/restore", ""},
		{"fork unknown checkpoint", "POST", "/v1/executions/ck/fork", `{"checkpoint":"three"}`, 404, "/checkpoint", "one, two"},
		{"fork unknown execution", "POST", "/v1/executions/none/fork", `{"checkpoint":"one"}`, 404, "", ""},
		{"fork bad restore", "POST", "/v1/executions/ck/fork", `{"checkpoint":"one","restore":"Both"}`, 400, "/restore", ""},
		{"fork no checkpoint", "POST", "/v1/executions/ck/fork", `{"name":"f"}`, 400, "/checkpoint", ""},
		{"fork name taken", "POST", "/v1/executions/ck/fork", `{"checkpoint":"one","name":"taken"}`, 409, "/name", ""},
		{"fork name of itself", "POST", "/v1/executions/ck/fork", `{"checkpoint":"one","name":"ck"}`, 409, "/name", ""},
		{"fork name with a slash", "POST", "/v1/executions/ck/fork", `{"checkpoint":"one","name":"a/b"}`, 400, "/name", ""},
		{"fork name with NUL", "POST", "/v1/executions/ck/fork", `{"checkpoint":"one","name":"a\u0000b"}`, 400, "/name", ""},
		{"fork name too long", "POST", "/v1/executions/ck/fork", `{"checkpoint":"one","name":"` + long + `"}`, 400, "/name", ""},
		{"fork unknown field", "POST", "/v1/executions/ck/fork", `{"checkpoint":"one","restor":"both"}`, 400, "", ""},
		{"memory namespace with NUL", "GET", "/v1/memory/a%00b", nil, 400, "", ""},
		{"memory namespace too long", "GET", "/v1/memory/" + strings.Repeat("n", engine.MaxMemoryName+1), nil, 400, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := ts.call(t, RoleOperator, tc.method, tc.path, tc.body, nil)
			p := problemIn(t, body)
			if code != tc.status || p.Status != tc.status {
				t.Fatalf("%d %s, want %d", code, body, tc.status)
			}
			if tc.pointer != "" && !slices.ContainsFunc(p.Errors, func(e api.FieldError) bool { return e.Pointer == tc.pointer }) {
				t.Errorf("problem %s names no field at %s", body, tc.pointer)
			}
			if !strings.Contains(p.Detail, tc.detail) {
				t.Errorf("problem detail %q does not name %q", p.Detail, tc.detail)
			}
		})
	}
	// A RUNNING execution is busy. (Mark one RUNNING: nobody runs it, as
	// Serve recovers such executions only when it starts.)
	t.Run("rollback a running execution", func(t *testing.T) {
		ctx := context.Background()
		e, err := ts.st.Load(ctx, "taken")
		if err != nil {
			t.Fatal(err)
		}
		if err := ts.st.Commit(ctx, &engine.Commit{Execution: "taken", Seq: e.Seq + 1, Status: engine.StatusRunning}); err != nil {
			t.Fatal(err)
		}
		code, body := ts.call(t, RoleOperator, "POST", "/v1/executions/taken/rollback", `{"checkpoint":"one"}`, nil)
		if p := problemIn(t, body); code != http.StatusConflict || p.Type != api.ProblemType+"busy" {
			t.Errorf("rollback of a running execution: %d %s, want 409 busy", code, body)
		}
	})
	// Nothing changed: no fork, ck as it was, and an unknown namespace is
	// empty.
	var list api.ExecutionList
	ts.call(t, RoleViewer, "GET", "/v1/executions", nil, &list)
	if len(list.Executions) != 2 {
		t.Errorf("%d executions after the refusals, want 2", len(list.Executions))
	}
	if slices.Contains(ts.events(t, "ck"), engine.EventExecutionRolledBack) {
		t.Errorf("a refused rollback rolled ck back")
	}
	var entries api.MemoryEntryList
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/memory/nobody", nil, &entries); code != 200 || len(entries.Entries) != 0 || entries.Namespace != "nobody" {
		t.Errorf("unknown namespace: %d %s, want 200 and no entries", code, body)
	}
}

// TestCheckpointRoles: viewers and approvers read checkpoints and memory
// but may not roll back or fork; without a token nothing answers.
func TestCheckpointRoles(t *testing.T) {
	ts := newTestServer(t)
	startCheckpointed(t, ts, "ck")
	rollback := map[string]any{"checkpoint": "one"}
	fork := map[string]any{"checkpoint": "one", "name": "f"}
	ts.checkRoles(t, []roleCase{
		{0, "GET", "/v1/executions/ck/checkpoints", nil, http.StatusUnauthorized},
		{0, "GET", "/v1/executions/ck/checkpoints/one", nil, http.StatusUnauthorized},
		{0, "GET", "/v1/executions/ck/checkpoints/one/diff?to=two", nil, http.StatusUnauthorized},
		{0, "POST", "/v1/executions/ck/rollback", rollback, http.StatusUnauthorized},
		{0, "POST", "/v1/executions/ck/fork", fork, http.StatusUnauthorized},
		{0, "GET", "/v1/memory", nil, http.StatusUnauthorized},
		{0, "GET", "/v1/memory/team", nil, http.StatusUnauthorized},
		{RoleViewer, "POST", "/v1/executions/ck/rollback", rollback, http.StatusForbidden},
		{RoleApprover, "POST", "/v1/executions/ck/rollback", rollback, http.StatusForbidden},
		{RoleViewer, "POST", "/v1/executions/ck/fork", fork, http.StatusForbidden},
		{RoleApprover, "POST", "/v1/executions/ck/fork", fork, http.StatusForbidden},
		{RoleViewer, "GET", "/v1/executions/ck/checkpoints", nil, http.StatusOK},
		{RoleViewer, "GET", "/v1/executions/ck/checkpoints/one", nil, http.StatusOK},
		{RoleViewer, "GET", "/v1/executions/ck/checkpoints/one/diff?to=two", nil, http.StatusOK},
		{RoleViewer, "GET", "/v1/memory", nil, http.StatusOK},
		{RoleViewer, "GET", "/v1/memory/team", nil, http.StatusOK},
	})
	if events := ts.events(t, "ck"); slices.Contains(events, engine.EventExecutionRolledBack) || slices.Contains(events, engine.EventForkedTo) {
		t.Errorf("refused requests changed ck: %v", events)
	}
	if code, _ := ts.call(t, RoleViewer, "GET", "/v1/executions/f", nil, nil); code != http.StatusNotFound {
		t.Errorf("a refused fork created f: %d", code)
	}
}

// TestRollbackRefusedByTheGuard: a rollback to a checkpoint whose document
// the workflow's schema refuses is answered with the refusal, and nothing
// changes.
func TestRollbackRefusedByTheGuard(t *testing.T) {
	ts := newTestServer(t)
	def := json.RawMessage(`{"StartAt":"Good","Governance":{"Guard":{"Schema":{"type":"object","required":["order"]}}},"States":{
		"Good":{"Type":"Checkpoint","Name":"good","Next":"Bad"},
		"Bad":{"Type":"Checkpoint","Name":"bad","OutputPath":"$.items","End":true}}}`)
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"definition": def, "name": "g", "input": json.RawMessage(`{"order":"o","items":[1]}`)}, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	before := ts.waitFor(t, "g", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	code, body := ts.call(t, RoleOperator, "POST", "/v1/executions/g/rollback", map[string]any{"checkpoint": "bad"}, nil)
	if code != http.StatusUnprocessableEntity || problemIn(t, body).Type != api.ProblemType+"governance" {
		t.Errorf("rollback to a refused document: %d %s, want a 422 governance problem", code, body)
	}
	if after := ts.waitFor(t, "g", func(api.Execution) bool { return true }); after.Status != "SUCCEEDED" || string(after.Output) != string(before.Output) {
		t.Errorf("after the refused rollback: %+v", after)
	}
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions/g/rollback", map[string]any{"checkpoint": "good"}, nil); code != http.StatusAccepted {
		t.Errorf("rollback to good: %d %s", code, body)
	}
}
