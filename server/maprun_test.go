package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// distributedFlow runs each item as a child execution: item 2 fails (one
// failure is tolerated).
const distributedFlow = `{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemsPath":"$.items","ToleratedFailureCount":1,"Label":"each",
	"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"},"StartAt":"Check","States":{
		"Check":{"Type":"Choice","Choices":[{"Variable":"$","NumericEquals":2,"Next":"Bad"}],"Default":"Good"},
		"Bad":{"Type":"Fail","Error":"Item.Bad","Cause":"two"},
		"Good":{"Type":"Pass","End":true}}},
	"End":true}}}`

// runDistributed runs distributedFlow as execution id over n items.
func runDistributed(t *testing.T, ts *testServer, id string, n int) {
	t.Helper()
	m, err := states.Parse([]byte(distributedFlow))
	if err != nil {
		t.Fatal(err)
	}
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	input, err := jsonvalue.Decode([]byte(`{"items":[` + strings.Join(items, ",") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := ts.s.x.Run(context.Background(), m, input, engine.StartOptions{ID: id})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("Run = %+v, %v", res, err)
	}
}

func TestMapRunsAPI(t *testing.T) {
	ts := newTestServer(t)
	runDistributed(t, ts, "dm", 5)
	var list api.MapRunList
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions/dm/map-runs", nil, &list); code != http.StatusOK {
		t.Fatalf("map-runs: %d %s", code, body)
	}
	if len(list.MapRuns) != 1 {
		t.Fatalf("map-runs %+v, want one", list)
	}
	mr := list.MapRuns[0]
	if mr.ID != "dm/Each#1.0" || mr.Label != "each" || mr.Status != "SUCCEEDED" || mr.Total != 5 || mr.Succeeded != 4 || mr.Failed != 1 || mr.StartedAt == nil || mr.StoppedAt == nil {
		t.Errorf("map run %+v", mr)
	}
	children := "/v1/executions/dm/map-runs/" + url.PathEscape(mr.ID) + "/children"
	cases := []struct {
		query string
		want  []int
		next  string
	}{
		{"", []int{0, 1, 2, 3, 4}, ""},
		{"?status=failed", []int{2}, ""},
		{"?status=SUCCEEDED&limit=2", []int{0, 1}, "1"},
		{"?status=SUCCEEDED&limit=2&after=1", []int{3, 4}, "4"},
		{"?status=SUCCEEDED&limit=2&after=4", []int{}, ""},
		{"?limit=5", []int{0, 1, 2, 3, 4}, "4"},
	}
	for _, c := range cases {
		var page api.MapRunChildList
		if code, body := ts.call(t, RoleViewer, "GET", children+c.query, nil, &page); code != http.StatusOK {
			t.Fatalf("children%s: %d %s", c.query, code, body)
		}
		got := []int{}
		for _, ch := range page.Children {
			got = append(got, ch.Index)
			if ch.ID != engine.ChildID(mr.ID, ch.Index) {
				t.Errorf("child %d has id %q", ch.Index, ch.ID)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) || page.Next != c.next || page.MapRun != mr.ID {
			t.Errorf("children%s = %v next %q (map run %q), want %v next %q", c.query, got, page.Next, page.MapRun, c.want, c.next)
		}
	}
	var failed api.MapRunChildList
	ts.call(t, RoleViewer, "GET", children+"?status=FAILED", nil, &failed)
	if len(failed.Children) != 1 || failed.Children[0].Error != "Item.Bad" || failed.Children[0].Cause != "two" || failed.Children[0].Status != "FAILED" {
		t.Errorf("failed children %+v", failed.Children)
	}
	// An execution without map runs lists none.
	ts.call(t, RoleOperator, "POST", "/v1/executions", `{"name":"plain","definition":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}}`, nil)
	ts.waitFor(t, "plain", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	var none api.MapRunList
	if code, body := ts.call(t, RoleViewer, "GET", "/v1/executions/plain/map-runs", nil, &none); code != http.StatusOK || none.MapRuns == nil || len(none.MapRuns) != 0 {
		t.Errorf("map-runs of an execution without any: %d %s", code, body)
	}
}

// TestMapRunsAPIRefuses checks what the map-runs routes refuse, each with
// a problem saying why.
func TestMapRunsAPIRefuses(t *testing.T) {
	ts := newTestServer(t)
	runDistributed(t, ts, "dm", 3)
	children := "/v1/executions/dm/map-runs/" + url.PathEscape("dm/Each#1.0") + "/children"
	cases := []struct {
		name       string
		role       Role
		path       string
		status     int
		kind, word string
	}{
		{"unknown execution", RoleViewer, "/v1/executions/nope/map-runs", http.StatusNotFound, "not-found", "nope"},
		{"children of an unknown execution", RoleViewer, "/v1/executions/nope/map-runs/" + url.PathEscape("nope/Each#1.0") + "/children", http.StatusNotFound, "not-found", "nope"},
		{"unknown map run", RoleViewer, "/v1/executions/dm/map-runs/" + url.PathEscape("dm/Other#1.0") + "/children", http.StatusNotFound, "not-found", "dm/Each#1.0"},
		{"map run of another execution", RoleViewer, "/v1/executions/plain/map-runs/" + url.PathEscape("dm/Each#1.0") + "/children", http.StatusNotFound, "not-found", "plain"},
		{"bad status", RoleViewer, children + "?status=DONE", http.StatusBadRequest, "bad-request", "status"},
		{"limit zero", RoleViewer, children + "?limit=0", http.StatusBadRequest, "bad-request", "limit"},
		{"limit too big", RoleViewer, children + "?limit=1001", http.StatusBadRequest, "bad-request", "limit"},
		{"limit not a number", RoleViewer, children + "?limit=ten", http.StatusBadRequest, "bad-request", "limit"},
		{"after not an index", RoleViewer, children + "?after=dm", http.StatusBadRequest, "bad-request", "after"},
		{"negative after", RoleViewer, children + "?after=-1", http.StatusBadRequest, "bad-request", "after"},
		{"no token", 0, "/v1/executions/dm/map-runs", http.StatusUnauthorized, "unauthenticated", ""},
	}
	ts.call(t, RoleOperator, "POST", "/v1/executions", `{"name":"plain","definition":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}}`, nil)
	ts.waitFor(t, "plain", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := ts.call(t, c.role, "GET", c.path, nil, nil)
			var p api.Problem
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatalf("%d %s: not a problem: %v", code, body, err)
			}
			if code != c.status || p.Type != api.ProblemType+c.kind || !strings.Contains(p.Detail, c.word) {
				t.Errorf("GET %s = %d %s, want %d %s naming %q", c.path, code, body, c.status, c.kind, c.word)
			}
		})
	}
}
