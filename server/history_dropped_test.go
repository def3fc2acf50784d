package server

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
)

// TestHistoryDroppedAPI: a Distributed Map child that succeeded is shown
// with historyDropped and an empty history (verified), its output kept; a
// child that failed and the parent keep their histories and show no
// historyDropped.
func TestHistoryDroppedAPI(t *testing.T) {
	ts := newTestServer(t)
	runDistributed(t, ts, "dm", 3)
	cases := []struct {
		id          string
		dropped     bool
		status      string
		wantsOutput bool
	}{
		{engine.ChildID("dm/Each#1.0", 0), true, "SUCCEEDED", true},
		{engine.ChildID("dm/Each#1.0", 2), false, "FAILED", false},
		{"dm", false, "SUCCEEDED", true},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			path := "/v1/executions/" + url.PathEscape(c.id)
			var e api.Execution
			if code, body := ts.call(t, RoleViewer, "GET", path, nil, &e); code != http.StatusOK {
				t.Fatalf("GET %s: %d %s", path, code, body)
			}
			if e.HistoryDropped != c.dropped || e.Status != c.status || (e.Output != nil) != c.wantsOutput {
				t.Errorf("GET %s = historyDropped %v, %s, output %s; want %v, %s, output %v", path, e.HistoryDropped, e.Status, e.Output, c.dropped, c.status, c.wantsOutput)
			}
			var h api.History
			if code, body := ts.call(t, RoleViewer, "GET", path+"/history?verify=true", nil, &h); code != http.StatusOK {
				t.Fatalf("GET %s/history: %d %s", path, code, body)
			}
			if !h.Verified || (len(h.Events) == 0) != c.dropped || h.Events == nil {
				t.Errorf("history: verified %v, %d events (nil %v); want verified, empty %v, a list", h.Verified, len(h.Events), h.Events == nil, c.dropped)
			}
		})
	}
	// Its raw JSON says so, and an execution with its history says
	// nothing.
	var raw map[string]any
	ts.call(t, RoleViewer, "GET", "/v1/executions/"+url.PathEscape(engine.ChildID("dm/Each#1.0", 1)), nil, &raw)
	if raw["historyDropped"] != true {
		t.Errorf("child 1's JSON: historyDropped %v, want true", raw["historyDropped"])
	}
	var parent map[string]any
	ts.call(t, RoleViewer, "GET", "/v1/executions/dm", nil, &parent)
	if v, ok := parent["historyDropped"]; ok || parent["id"] != "dm" {
		t.Errorf("the parent's JSON: id %v, historyDropped %v; want dm and none", parent["id"], v)
	}
}
