package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/postgres"
	"github.com/aslrun/aslrun/store/postgres/pgtest"
)

// globalFlow is a workflow whose Classify Task caches with Scope global
// by the ticket's text; tail differs between the workflows that share it.
const globalFlow = `{"StartAt":"Classify","States":{
	"Classify":{"Type":"Task","Agent":"Classifier","Parameters":{"text.$":"$.text"},"Cache":{"Key.$":"$.text","Scope":"global"},"ResultPath":"$.label","Next":"Tail"},
	"Tail":{"Type":"Pass","Result":%q,"ResultPath":"$.by","End":true}}}`

// executorStore is a store both the server and its executor use.
type executorStore interface {
	Store
	engine.Store
}

// TestTaskCacheGlobalServer: on bbolt and on PostgreSQL, two registered
// workflows with the same Task (agent, state definition, key) share its
// global entry: the agent is called once, the later executions (the
// other workflow's, one started from the workflow's page) hit the first's
// entry, each execution keeps its registry ("name@version", the latest's
// number when started by 0), and GET /v1/cache?scope=global lists it. The same
// definition started inline is refused (422) at the Task's Scope field,
// and nothing is created.
func TestTaskCacheGlobalServer(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T) executorStore
	}{
		{"bbolt", func(t *testing.T) executorStore {
			st, err := store.OpenBolt(filepath.Join(t.TempDir(), "db"), store.BoltOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
		{"postgres", func(t *testing.T) executorStore {
			db, err := postgres.Open(context.Background(), pgtest.Fresh(t), postgres.Options{Migrate: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			reg := agents.NewRegistry()
			if err := reg.Register("Classifier", agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
				return fmt.Sprintf("label %d", calls.Add(1)), nil
			})); err != nil {
				t.Fatal(err)
			}
			st := tc.open(t)
			ts := newTestServer(t, func(c *Config) {
				c.Store, c.Agents = st, reg
				c.Executor = engine.New(engine.Config{Store: st, Agents: reg})
			})
			for _, wf := range []string{"triage", "digest"} {
				if code, body := ts.call(t, RoleAdmin, "POST", "/v1/workflows", api.RegisterWorkflow{Name: wf, Definition: json.RawMessage(fmt.Sprintf(globalFlow, wf))}, nil); code != http.StatusCreated {
					t.Fatalf("register %s: %d %s", wf, code, body)
				}
			}
			// triage by its version, digest by its latest (0), and triage
			// again from its page.
			var labels []string
			for _, wf := range []struct {
				name    string
				version int
			}{{"triage", 1}, {"digest", 0}} {
				start := api.StartExecution{Workflow: wf.name, Version: wf.version, Name: wf.name + "-1", Input: json.RawMessage(`{"text":"refund please"}`)}
				if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", start, nil); code != http.StatusCreated {
					t.Fatalf("start %s: %d %s", wf.name, code, body)
				}
				e := ts.waitFor(t, wf.name+"-1", succeeded)
				var out struct{ Label, By string }
				if err := json.Unmarshal(e.Output, &out); err != nil || out.By != wf.name {
					t.Fatalf("%s's output %s (%v)", wf.name, e.Output, err)
				}
				labels = append(labels, out.Label)
				if x, err := st.Load(context.Background(), wf.name+"-1"); err != nil || x.Registry != wf.name+"@1" {
					t.Errorf("%s-1's registry %q (%v), want %s@1", wf.name, x.Registry, err, wf.name)
				}
			}
			op := ts.signedIn(t, RoleOperator)
			if code, _, h := op.post(t, "/workflows/triage/start", url.Values{"csrf": {op.csrf(t)}, "version": {"1"}, "input": {`{"text":"refund please"}`}, "name": {"triage-page"}}); code != http.StatusSeeOther {
				t.Fatalf("start from the page: %d to %q", code, h.Get("Location"))
			}
			e := ts.waitFor(t, "triage-page", succeeded)
			var out struct{ Label string }
			if err := json.Unmarshal(e.Output, &out); err != nil {
				t.Fatal(err)
			}
			labels = append(labels, out.Label)
			if got := calls.Load(); got != 1 || labels[0] != labels[1] || labels[0] != labels[2] {
				t.Errorf("%d agent calls, labels %q; want one call whose label all got", got, labels)
			}
			var page api.CachePage
			if code, body := ts.call(t, RoleAdmin, "GET", "/v1/cache?scope=global", nil, &page); code != http.StatusOK || len(page.Entries) != 1 {
				t.Fatalf("GET /v1/cache?scope=global: %d %s", code, body)
			}
			if e := page.Entries[0]; e.Scope != "global" || e.Workflow != "triage" || e.Execution != "triage-1" || e.Hits != 2 {
				t.Errorf("entry %+v; want scope global, made by triage-1, hit twice", e)
			}

			// Inline, the same definition is refused at start.
			inline := api.StartExecution{Definition: json.RawMessage(fmt.Sprintf(globalFlow, "inline")), Name: "inline-1", Input: json.RawMessage(`{"text":"refund please"}`)}
			var p struct {
				Errors []api.FieldError `json:"errors"`
			}
			code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", inline, nil)
			if code != http.StatusUnprocessableEntity || json.Unmarshal(body, &p) != nil || len(p.Errors) != 1 {
				t.Fatalf("inline start: %d %s, want 422 with one problem", code, body)
			}
			if e := p.Errors[0]; e.Pointer != "/definition/States/Classify/Cache/Scope" || e.State != "Classify" ||
				!strings.Contains(e.Detail, "global caches only for workflows an admin registered") {
				t.Errorf("inline start's problem %+v", e)
			}
			if _, err := st.Load(context.Background(), "inline-1"); !errors.Is(err, engine.ErrNotFound) {
				t.Errorf("Load(inline-1) = %v, want ErrNotFound", err)
			}
			if got := calls.Load(); got != 1 {
				t.Errorf("%d agent calls after the refused start, want 1", got)
			}
		})
	}
}
