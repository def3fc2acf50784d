package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/conformance"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

func readJSON(t *testing.T, file string) any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonvalue.Decode(data)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v
}

// script is an example's optional script.json: what the test does beyond
// one run with the mock file.
type script struct {
	// Decisions answer the run's approvals (conformance's format).
	Decisions []conformance.Decision
	// First is the status (and error) the first run ends with, when it is
	// not SUCCEEDED; the run is then rolled back to ResumeFromCheckpoint,
	// with the agents of ResumeMock, and must end with output.json.
	First                *struct{ Status, Error string }
	ResumeFromCheckpoint string
	ResumeMock           string
	// Again runs a second execution on the same store (Input and Output
	// name files of the example).
	Again *struct{ Input, Output string }
	// Memory is the agent memory expected at the end.
	Memory map[string]map[string]any
	// Events counts history events of the (last) execution by type.
	Events map[string]int
}

func readScript(t *testing.T, dir string) *script {
	t.Helper()
	sc := &script{}
	data, err := os.ReadFile(filepath.Join(dir, "script.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return sc
	}
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonvalue.Decode(data)
	if err != nil {
		t.Fatalf("script.json: %v", err)
	}
	obj := v.(map[string]any)
	for k, val := range obj {
		switch k {
		case "decisions":
			if sc.Decisions, err = conformance.ParseDecisions(val); err != nil {
				t.Fatalf("script.json: %v", err)
			}
		case "first":
			f := val.(map[string]any)
			sc.First = &struct{ Status, Error string }{f["status"].(string), f["error"].(string)}
		case "resumeFromCheckpoint":
			sc.ResumeFromCheckpoint = val.(string)
		case "resumeMock":
			sc.ResumeMock = val.(string)
		case "again":
			a := val.(map[string]any)
			sc.Again = &struct{ Input, Output string }{a["input"].(string), a["output"].(string)}
		case "memory":
			sc.Memory = map[string]map[string]any{}
			for ns, keys := range val.(map[string]any) {
				sc.Memory[ns] = keys.(map[string]any)
			}
		case "events":
			sc.Events = map[string]int{}
			for typ, n := range val.(map[string]any) {
				c, _ := jsonvalue.Int64(n.(json.Number))
				sc.Events[typ] = int(c)
			}
		default:
			t.Fatalf("script.json: unknown field %q", k)
		}
	}
	return sc
}

func mockRegistry(t *testing.T, file string) *agents.Registry {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	mocks, err := agents.ParseMocks(data)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	reg := agents.NewRegistry()
	if err := mocks.Register(reg); err != nil {
		t.Fatal(err)
	}
	return reg
}

func wantResult(t *testing.T, res *engine.Result, want any) {
	t.Helper()
	if res.Status != engine.StatusSucceeded {
		t.Fatalf("status %s (%s: %s), want SUCCEEDED", res.Status, res.Error, res.Cause)
	}
	if !jsonvalue.Equal(res.Output, want) {
		got, _ := jsonvalue.Marshal(res.Output)
		w, _ := jsonvalue.Marshal(want)
		t.Errorf("output = %s, want %s", got, w)
	}
}

// example is one example workflow: its folder and its parsed definition.
type example struct {
	dir string
	m   *states.Machine
}

// examples parses every example's workflow.json.
func examples(t *testing.T) []example {
	t.Helper()
	defs, err := filepath.Glob("*/workflow.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) < 3 {
		t.Fatalf("found %d example workflows, want at least 3", len(defs))
	}
	var out []example
	for _, def := range defs {
		data, err := os.ReadFile(def)
		if err != nil {
			t.Fatal(err)
		}
		m, err := states.Parse(data)
		if err != nil {
			t.Fatalf("parse %s: %v", def, err)
		}
		out = append(out, example{dir: filepath.Dir(def), m: m})
	}
	return out
}

// TestExamples parses and runs every example in each durability mode,
// with its mock file and script.json, and checks the output. Delays run on
// the synctest clock. Under durability none (no store) an example that
// could park is refused at start, and one that rolls back stops at the
// first run's outcome (a rollback needs a store); its history and memory
// are not checked (there are none to read).
func TestExamples(t *testing.T) {
	for _, mode := range []engine.Durability{engine.DurabilityStrict, engine.DurabilityBatched, engine.DurabilityNone} {
		for _, ex := range examples(t) {
			dir, m := ex.dir, ex.m
			t.Run(string(mode)+"/"+dir, func(t *testing.T) { runExample(t, mode, dir, m) })
		}
	}
}

func runExample(t *testing.T, mode engine.Durability, dir string, m *states.Machine) {
	reg := mockRegistry(t, filepath.Join(dir, "mock.json"))
	sc := readScript(t, dir)
	input := readJSON(t, filepath.Join(dir, "input.json"))
	want := readJSON(t, filepath.Join(dir, "output.json"))
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var st *store.Memory
		quiet := func(context.Context, engine.EscalationNotice) error { return nil }
		cfg := engine.Config{Agents: reg, OnEscalation: quiet, Durability: mode}
		if mode != engine.DurabilityNone {
			st = store.NewMemory()
			cfg.Store = st
		}
		x := engine.New(cfg)
		res, err := x.Run(ctx, m, input, engine.StartOptions{MachineName: dir})
		if st == nil && errors.Is(err, engine.ErrDurability) {
			if len(sc.Decisions) == 0 {
				t.Fatalf("refused without a store, but its script makes no decision: %v", err)
			}
			return
		}
		if err == nil {
			res, err = conformance.Drive(ctx, x, res, sc.Decisions)
		}
		if err != nil {
			t.Fatal(err)
		}
		if sc.First != nil {
			if string(res.Status) != sc.First.Status || res.Error != sc.First.Error {
				t.Fatalf("first run: %s %s (%s), want %s %s", res.Status, res.Error, res.Cause, sc.First.Status, sc.First.Error)
			}
			if st == nil {
				return
			}
			opts := engine.ResumeOptions{Agents: mockRegistry(t, filepath.Join(dir, sc.ResumeMock))}
			if res, err = x.Rollback(ctx, res.ID, sc.ResumeFromCheckpoint, opts); err != nil {
				t.Fatal(err)
			}
		}
		wantResult(t, res, want)
		if sc.Again != nil {
			in2 := readJSON(t, filepath.Join(dir, sc.Again.Input))
			if res, err = x.Run(ctx, m, in2, engine.StartOptions{MachineName: dir}); err != nil {
				t.Fatal(err)
			}
			wantResult(t, res, readJSON(t, filepath.Join(dir, sc.Again.Output)))
		}
		if st == nil {
			return
		}
		for ns, keys := range sc.Memory {
			for k, w := range keys {
				got, err := st.ReadMemory(ctx, ns, []string{k}, time.Now())
				if err != nil || got[k] == nil || !jsonvalue.Equal(got[k].Value, w) {
					t.Errorf("memory %s/%s = %v, %v; want %v", ns, k, got[k], err, w)
				}
			}
		}
		hist, err := st.History(ctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		for typ, n := range sc.Events {
			got := 0
			for _, e := range hist {
				if e.Type == typ {
					got++
				}
			}
			if got != n {
				t.Errorf("%d %s events, want %d", got, typ, n)
			}
		}
	})
}
