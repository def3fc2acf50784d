package engine_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
)

// echoAgent returns its input, and counts its calls.
func echoAgent(n *int) agents.Agent {
	return agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		*n++
		return req.Input, nil
	})
}

// runOn runs def to its end on x and returns the result.
func runOn(t *testing.T, x *engine.Executor, def, input string) *engine.Result {
	t.Helper()
	res, err := x.Run(context.Background(), mustParse(t, def), mustJSON(t, input), engine.StartOptions{})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

// memoryValue reads one key through the store.
func memoryValue(t *testing.T, ms engine.MemoryStore, ns, key string) string {
	t.Helper()
	got, err := ms.ReadMemory(context.Background(), ns, []string{key}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	e, ok := got[key]
	if !ok {
		return "<none>"
	}
	b, _ := jsonvalue.Marshal(e.Value)
	return string(b)
}

// The support-triage shape: the first execution finds nothing and writes
// the profile, the second reads it back; both go through the store.
func TestMemoryAcrossExecutions(t *testing.T) {
	def := `{"StartAt":"Load","States":{
		"Load":{"Type":"Task","Agent":"Echo","Memory":{"Namespace":"customer_{{$.customer}}",
			"Read":{"Keys":["profile","visits"],"InjectAt":"$.known","Default":{"profile":{"isNew":true}}}},
			"ResultSelector":{"known.$":"$.known"},"ResultPath":"$.loaded","Next":"Save"},
		"Save":{"Type":"Pass","Result":{"tier":"gold"},"ResultPath":"$.profile",
			"Memory":{"Namespace":"customer_{{$.customer}}","Write":[
				{"Key":"profile","Value.$":"$.profile"},
				{"Key":"visits","Value":[1],"Merge":true},
				{"Key":"last","TTL":"1h"}]},"End":true}}}`
	st := store.NewMemory()
	calls := 0
	x := engine.New(engine.Config{Agents: registry(t, echoAgent(&calls), "Echo"), Store: st})
	first := runOn(t, x, def, `{"customer":"c-1"}`)
	wantOutput(t, first, `{"customer":"c-1","loaded":{"known":{"profile":{"isNew":true},"visits":{"profile":{"isNew":true}}}},"profile":{"tier":"gold"}}`)
	second := runOn(t, x, def, `{"customer":"c-1"}`)
	wantOutput(t, second, `{"customer":"c-1","loaded":{"known":{"profile":{"tier":"gold"},"visits":[1]}},"profile":{"tier":"gold"}}`)
	if got := memoryValue(t, st, "customer_c-1", "visits"); got != `[1,1]` {
		t.Errorf("visits = %s, want [1,1] (merged arrays append)", got)
	}
	// Without Value or Value.$, the state's result is stored.
	if got := memoryValue(t, st, "customer_c-1", "last"); got != `{"tier":"gold"}` {
		t.Errorf("last = %s", got)
	}
	// Another customer's namespace is separate.
	third := runOn(t, x, def, `{"customer":"c-2"}`)
	wantOutput(t, third, `{"customer":"c-2","loaded":{"known":{"profile":{"isNew":true},"visits":{"profile":{"isNew":true}}}},"profile":{"tier":"gold"}}`)

	hist, err := st.History(context.Background(), second.ID)
	if err != nil {
		t.Fatal(err)
	}
	var read, written int
	for _, e := range hist {
		switch e.Type {
		case engine.EventMemoryRead:
			read++
			d := e.Detail.(map[string]any)
			if d["namespace"] != "customer_c-1" || len(d["found"].([]any)) != 2 {
				t.Errorf("MemoryRead detail %v", d)
			}
		case engine.EventMemoryWritten:
			written++
		}
	}
	if read != 1 || written != 3 {
		t.Errorf("%d MemoryRead and %d MemoryWritten events, want 1 and 3", read, written)
	}
}

func TestMemoryTTLAndWorkflowBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		def := `{"Memory":{"Backend":"memory","DefaultTTL":"30m","Namespace":"team/{{$.team}}"},"StartAt":"P","States":{
			"P":{"Type":"Pass","Parameters":{"seen.$":"$._memory.count"},"ResultPath":"$.r",
				"Memory":{"Read":["count"],"Write":[{"Key":"count","Value":1},{"Key":"kept","Value":true,"TTL":"never"}]},"End":true}}}`
		st := store.NewMemory()
		x := engine.New(engine.Config{Store: st})
		wantOutput(t, runOn(t, x, def, `{"team":"a"}`), `{"team":"a","r":{"seen":null}}`)
		time.Sleep(29 * time.Minute)
		wantOutput(t, runOn(t, x, def, `{"team":"a"}`), `{"team":"a","r":{"seen":1}}`)
		time.Sleep(31 * time.Minute)
		if got := memoryValue(t, st, "team/a", "count"); got != "<none>" {
			t.Errorf("count after its DefaultTTL = %s", got)
		}
		if got := memoryValue(t, st, "team/a", "kept"); got != "true" {
			t.Errorf("kept (TTL never) = %s", got)
		}
		rep, err := st.GC(context.Background(), time.Now())
		if err != nil || rep.Memory != 1 {
			t.Errorf("GC = %+v, %v; want 1 memory entry removed", rep, err)
		}
	})
}

func TestMemoryNamespaces(t *testing.T) {
	x := engine.New(engine.Config{})
	write := func(ns string) string {
		return `{"StartAt":"P","States":{"P":{"Type":"Pass","Result":"v","Memory":{` + ns + `"Write":{"Key":"k"}},"End":true}}}`
	}
	read := `{"StartAt":"P","States":{"P":{"Type":"Pass","Memory":{"Namespace.$":"States.Format('ns-{}', $.n)","Read":["k"]},"End":true}}}`
	// Without a store the executor keeps memory itself, for its runs.
	runOn(t, x, write(`"Namespace.$":"States.Format('ns-{}', $.n)",`), `{"n":1}`)
	wantOutput(t, runOn(t, x, read, `{"n":1}`), `{"n":1,"_memory":{"k":"v"}}`)
	wantOutput(t, runOn(t, x, read, `{"n":2}`), `{"n":2,"_memory":{"k":null}}`)
	// No namespace anywhere: "default".
	runOn(t, x, write(""), `{}`)
	wantOutput(t, runOn(t, x, `{"StartAt":"P","States":{"P":{"Type":"Pass","Memory":{"Read":["k"]},"End":true}}}`, `{}`), `{"_memory":{"k":"v"}}`)

	errs := []struct {
		name, def, input, cause string
	}{
		{"namespace path missing", write(`"Namespace":"u_{{$.user}}",`), `{}`, "Memory.Namespace"},
		{"namespace not a string", write(`"Namespace.$":"$.n",`), `{"n":1}`, "not a string"},
		{"namespace empty", write(`"Namespace.$":"$.n",`), `{"n":""}`, "the namespace is empty"},
		{"inject into an array", `{"StartAt":"P","States":{"P":{"Type":"Pass","Memory":{"Read":["k"]},"End":true}}}`, `[1]`, "Memory.Read.InjectAt"},
		{"value path missing", `{"StartAt":"P","States":{"P":{"Type":"Pass","Memory":{"Write":{"Key":"k","Value.$":"$.nope"}},"End":true}}}`, `{}`, `Memory.Write "k": Value.$`},
	}
	for _, c := range errs {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, runOn(t, x, c.def, c.input), asl.ErrRuntime, c.cause)
		})
	}
}

// A state that does not complete writes nothing, and a Catch does not
// commit the failed state's writes.
func TestMemoryWrittenOnlyOnCompletion(t *testing.T) {
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	def := `{"StartAt":"P","States":{
		"P":{"Type":"Pass","Result":1,"Memory":{"Write":{"Key":"k"}},"OutputPath":"$.missing",
			"Next":"Done"},
		"Done":{"Type":"Succeed"}}}`
	wantError(t, runOn(t, x, def, `{}`), asl.ErrRuntime, "")
	if got := memoryValue(t, st, engine.DefaultNamespace, "k"); got != "<none>" {
		t.Errorf("a failed state wrote k = %s", got)
	}
	governed := `{"Governance":{"WritePolicy":{"Deny":["$.secret"]},"OnViolation":"SKIP_NODE"},"StartAt":"P","States":{
		"P":{"Type":"Pass","Result":1,"ResultPath":"$.secret","Memory":{"Write":{"Key":"g"}},"End":true}}}`
	wantOutput(t, runOn(t, x, governed, `{}`), `{}`)
	if got := memoryValue(t, st, engine.DefaultNamespace, "g"); got != "<none>" {
		t.Errorf("a state whose write was refused wrote g = %s", got)
	}
}

// TestMemoryMergeOnceAcrossCrashes crashes during each call and checks
// that a merge is applied exactly once: with the completion that carries
// it.
func TestMemoryMergeOnceAcrossCrashes(t *testing.T) {
	def := mustParse(t, `{"StartAt":"A","States":{
		"A":{"Type":"Task","Agent":"Worker","ResultPath":"$.a","Memory":{"Write":{"Key":"log","Value":["a"],"Merge":true}},"Next":"B"},
		"B":{"Type":"Task","Agent":"Worker","ResultPath":"$.b","Memory":{"Write":{"Key":"log","Value":["b"],"Merge":true}},"End":true}}}`)
	for crash := 1; crash <= 2; crash++ {
		st := store.NewMemory()
		ctx, cancel := context.WithCancel(context.Background())
		c := &calls{crashAt: crash, cancel: cancel}
		_, err := engine.New(engine.Config{Agents: registry(t, c.agent(), "Worker"), Store: st}).Run(ctx, def, mustJSON(t, `{}`), engine.StartOptions{ID: "e"})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("crash at %d: %v", crash, err)
		}
		res, err := engine.New(engine.Config{Agents: registry(t, c.agent(), "Worker"), Store: st}).Resume(context.Background(), "e", engine.ResumeOptions{})
		if err != nil || res.Status != engine.StatusSucceeded {
			t.Fatalf("resume: %v %+v", err, res)
		}
		if got := memoryValue(t, st, engine.DefaultNamespace, "log"); got != `["a","b"]` {
			t.Errorf("crash at call %d: log = %s, want [\"a\",\"b\"]", crash, got)
		}
	}
}

// memoryless is a store that keeps no agent memory.
type memoryless struct{ engine.Store }

func TestMemoryNeedsAMemoryStore(t *testing.T) {
	x := engine.New(engine.Config{Store: memoryless{store.NewMemory()}})
	def := `{"StartAt":"P","States":{"P":{"Type":"Pass","Memory":{"Read":["k"]},"End":true}}}`
	wantError(t, runOn(t, x, def, `{}`), asl.ErrRuntime, "needs a store that keeps agent memory")
}

// A checkpoint keeps the memory of the namespaces the execution used; a
// rollback or fork puts it back unless told to restore the document only.
func TestMemoryRestoredFromCheckpoint(t *testing.T) {
	def := mustParse(t, `{"StartAt":"First","States":{
		"First":{"Type":"Pass","Memory":{"Namespace":"n","Write":{"Key":"log","Value":[1],"Merge":true}},"Next":"Save"},
		"Save":{"Type":"Checkpoint","Name":"cp","Next":"Second"},
		"Second":{"Type":"Pass","Memory":{"Namespace":"n","Write":[{"Key":"log","Value":[2],"Merge":true},{"Key":"later","Value":true}]},"End":true}}}`)
	cases := []struct {
		name    string
		restore engine.Restore
		fork    bool
		log     string
		later   string
	}{
		{"rollback, all", engine.RestoreAll, false, `[1,2]`, `true`},
		{"rollback, document only", engine.RestoreDocument, false, `[1,2,2]`, `true`},
		{"fork, all", engine.RestoreAll, true, `[1,2]`, `true`},
		{"fork, memory only (from the start)", engine.RestoreMemory, true, `[1,1,2]`, `true`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := store.NewMemory()
			x := engine.New(engine.Config{Store: st})
			if _, err := x.Run(context.Background(), def, mustJSON(t, `{}`), engine.StartOptions{ID: "e"}); err != nil {
				t.Fatal(err)
			}
			if got := memoryValue(t, st, "n", "log"); got != `[1,2]` {
				t.Fatalf("log after the run = %s", got)
			}
			var (
				res *engine.Result
				err error
			)
			opts := engine.ResumeOptions{Restore: c.restore}
			if c.fork {
				res, err = x.Fork(context.Background(), "e", "cp", opts)
			} else {
				res, err = x.Rollback(context.Background(), "e", "cp", opts)
			}
			if err != nil || res.Status != engine.StatusSucceeded {
				t.Fatalf("%v %+v", err, res)
			}
			if got := memoryValue(t, st, "n", "log"); got != c.log {
				t.Errorf("log = %s, want %s", got, c.log)
			}
			if got := memoryValue(t, st, "n", "later"); got != c.later {
				t.Errorf("later = %s, want %s", got, c.later)
			}
		})
	}
	// The snapshot is in the checkpoint.
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	if _, err := x.Run(context.Background(), def, mustJSON(t, `{}`), engine.StartOptions{ID: "e"}); err != nil {
		t.Fatal(err)
	}
	cp, err := st.Checkpoint(context.Background(), "e", "cp")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := jsonvalue.Marshal(cp.Memory)
	if want := `{"entries":[{"expiresAt":null,"key":"log","namespace":"n","updatedAt":`; len(b) < len(want) || string(b[:len(want)]) != want {
		t.Errorf("checkpoint memory = %s", b)
	}
}

// The namespaces an execution used are committed: a checkpoint taken after
// a crash and a resume still snapshots the namespace used before it.
func TestMemoryNamespacesSurviveACrash(t *testing.T) {
	def := mustParse(t, `{"StartAt":"Use","States":{
		"Use":{"Type":"Pass","Memory":{"Namespace":"n","Write":{"Key":"k","Value":1}},"Next":"Work"},
		"Work":{"Type":"Task","Agent":"Worker","ResultPath":"$.w","Next":"Save"},
		"Save":{"Type":"Checkpoint","Name":"cp","End":true}}}`)
	st := store.NewMemory()
	ctx, cancel := context.WithCancel(context.Background())
	c := &calls{crashAt: 1, cancel: cancel}
	if _, err := engine.New(engine.Config{Agents: registry(t, c.agent(), "Worker"), Store: st}).Run(ctx, def, mustJSON(t, `{}`), engine.StartOptions{ID: "e"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v", err)
	}
	e, err := st.Load(context.Background(), "e")
	if err != nil || len(e.Progress.Namespaces) != 1 || e.Progress.Namespaces[0] != "n" {
		t.Fatalf("namespaces after the crash: %v, %v", e.Progress.Namespaces, err)
	}
	if _, err := engine.New(engine.Config{Agents: registry(t, c.agent(), "Worker"), Store: st}).Resume(context.Background(), "e", engine.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	cp, err := st.Checkpoint(context.Background(), "e", "cp")
	if err != nil {
		t.Fatal(err)
	}
	if ns := cp.Memory.(map[string]any)["namespaces"]; !jsonvalue.Equal(ns, []any{"n"}) {
		t.Errorf("checkpoint namespaces %v, want [n]", ns)
	}
}
