package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/itemio"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// distributedDef reads rows.csv from the bucket "in" in batches of 3, runs
// Work on each batch (which fails a batch whose first row says so), and
// writes the results to the bucket "out".
const distributedDef = `{"StartAt":"Rows","States":{"Rows":{"Type":"Map","Label":"rows",
	"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"CSV"},"Parameters":{"Bucket":"s3://in","Key":"rows.csv"}},
	"ItemSelector":{"id.$":"$$.Map.Item.Value.id","fail.$":"$$.Map.Item.Value.fail","index.$":"$$.Map.Item.Index"},
	"ItemBatcher":{"MaxItemsPerBatch":3,"BatchInput":{"run.$":"$.run"}},
	"ToleratedFailureCount":%d,"MaxConcurrency":2,
	%s
	"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},"StartAt":"Work","States":{
		"Work":{"Type":"Task","Agent":"Work","End":true}}},
	"End":true}}}`

const resultWriter = `"ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"out","Prefix":"results"}},`

// batchAgent answers {"ids": [...]} for a batch, fails one whose first
// row says fail=yes, and counts its calls by execution.
type batchAgent struct {
	mu    sync.Mutex
	calls map[string]int
	// crashAfter cancels cancel after that many calls (0: never).
	crashAfter int
	cancel     context.CancelFunc
	// fixed makes no batch fail.
	fixed bool
}

// count returns the calls made for execution id.
func (a *batchAgent) count(id string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls[id]
}

func (a *batchAgent) Invoke(ctx context.Context, req *agents.Request) (any, error) {
	a.mu.Lock()
	a.calls[req.Execution]++
	n := 0
	for _, c := range a.calls {
		n += c
	}
	if a.crashAfter > 0 && n == a.crashAfter {
		a.cancel()
	}
	fixed := a.fixed
	a.mu.Unlock()
	in := req.Input.(map[string]any)
	items := in["Items"].([]any)
	if !fixed && items[0].(map[string]any)["fail"] == "yes" {
		return nil, &asl.Error{Name: "Batch.Bad", Cause: "row " + items[0].(map[string]any)["id"].(string)}
	}
	var ids []any
	for _, it := range items {
		ids = append(ids, it.(map[string]any)["id"])
	}
	return map[string]any{"ids": ids, "run": in["BatchInput"].(map[string]any)["run"]}, nil
}

// writeRows writes rows.csv with n rows, rows in fail failing.
func writeRows(t *testing.T, dir string, n int, fail map[int]bool) {
	t.Helper()
	var b strings.Builder
	b.WriteString("id,fail\n")
	for i := range n {
		f := "no"
		if fail[i] {
			f = "yes"
		}
		fmt.Fprintf(&b, "r%d,%s\n", i, f)
	}
	if err := os.WriteFile(filepath.Join(dir, "rows.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func distRegistry(t *testing.T, a agents.Agent, in, out string) *agents.Registry {
	t.Helper()
	reg := registry(t, a, "Work")
	if err := reg.RegisterBucket("in", itemio.Dir(in)); err != nil {
		t.Fatal(err)
	}
	if out != "" {
		if err := reg.RegisterBucket("out", itemio.Dir(out)); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func TestDistributedMapBatchesAndOutputs(t *testing.T) {
	in := t.TempDir()
	writeRows(t, in, 8, map[int]bool{3: true})
	a := &batchAgent{calls: map[string]int{}}
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: distRegistry(t, a, in, ""), Store: st})
	m := mustParse(t, fmt.Sprintf(distributedDef, 1, ""))
	res, err := x.Run(context.Background(), m, mustJSON(t, `{"run":"r1"}`), engine.StartOptions{ID: "p"})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	got, _ := json.Marshal(res.Output)
	want := `[{"ids":["r0","r1","r2"],"run":"r1"},{"Cause":"row r3","Error":"Batch.Bad"},{"ids":["r6","r7"],"run":"r1"}]`
	if string(got) != want {
		t.Errorf("output %s, want %s", got, want)
	}
	// Each batch ran once, as its own child execution of p.
	for i := range 3 {
		id := engine.ChildID("p/Rows#1.0", i)
		if n := a.count(id); n != 1 {
			t.Errorf("child %s called Work %d times, want 1", id, n)
		}
		e, err := st.Load(context.Background(), id)
		if err != nil || e.Parent != "p" {
			t.Errorf("child %s: %v, Parent %q", id, err, e.Parent)
		}
	}
	runs, err := x.MapRuns(context.Background(), "p")
	if err != nil || len(runs) != 1 {
		t.Fatalf("MapRuns = %+v, %v", runs, err)
	}
	r := runs[0]
	if r.ID != "p/Rows#1.0" || r.Label != "rows" || r.Status != "SUCCEEDED" || r.Total != 3 || r.Succeeded != 2 || r.Failed != 1 || r.Pending != 0 {
		t.Errorf("map run %+v", r)
	}
	children, err := x.MapRunChildren(context.Background(), r.ID)
	if err != nil || len(children) != 3 || children[1].Status != engine.StatusFailed || children[1].Error != "Batch.Bad" {
		t.Errorf("MapRunChildren = %+v, %v", children, err)
	}
	for _, c := range []struct {
		page engine.ChildrenPage
		want []int
	}{
		{engine.ChildrenPage{Status: engine.StatusFailed}, []int{1}},
		{engine.ChildrenPage{Status: engine.StatusSucceeded}, []int{0, 2}},
		{engine.ChildrenPage{From: 1, Limit: 1}, []int{1}},
		{engine.ChildrenPage{From: 2, Limit: 5}, []int{2}},
		{engine.ChildrenPage{From: 3}, nil},
		{engine.ChildrenPage{Status: engine.StatusAborted}, nil},
	} {
		page, err := x.MapRunChildrenPage(context.Background(), r.ID, c.page)
		var got []int
		for _, ch := range page {
			got = append(got, ch.Index)
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("MapRunChildrenPage(%+v) = %v, %v; want %v", c.page, got, err, c.want)
		}
	}
}

func TestDistributedMapThreshold(t *testing.T) {
	in := t.TempDir()
	writeRows(t, in, 9, map[int]bool{0: true, 3: true})
	a := &batchAgent{calls: map[string]int{}}
	x := engine.New(engine.Config{Agents: distRegistry(t, a, in, ""), Store: store.NewMemory()})
	res, err := x.Run(context.Background(), mustParse(t, fmt.Sprintf(distributedDef, 1, "")), mustJSON(t, `{"run":"r"}`), engine.StartOptions{ID: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusFailed || res.Error != "States.ExceedToleratedFailureThreshold" || res.Cause != "The specified tolerated failure threshold was exceeded" {
		t.Errorf("Run = %+v, want States.ExceedToleratedFailureThreshold", res)
	}
}

func TestDistributedMapResultWriter(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	writeRows(t, in, 7, map[int]bool{3: true})
	a := &batchAgent{calls: map[string]int{}}
	x := engine.New(engine.Config{Agents: distRegistry(t, a, in, out), Store: store.NewMemory()})
	res, err := x.Run(context.Background(), mustParse(t, fmt.Sprintf(distributedDef, 1, resultWriter)), mustJSON(t, `{"run":"r"}`), engine.StartOptions{ID: "p", MachineName: "M"})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	got, _ := json.Marshal(res.Output)
	want := `{"MapRunArn":"arn:aws:states:local:000000000000:mapRun:M/rows:p/Rows#1.0","ResultWriterDetails":{"Bucket":"out","Key":"results/Rows#1.0/manifest.json"}}`
	if string(got) != want {
		t.Errorf("output %s, want %s", got, want)
	}
	var manifest map[string]any
	text, err := os.ReadFile(filepath.Join(out, "results/Rows#1.0/manifest.json"))
	if err != nil || json.Unmarshal(text, &manifest) != nil {
		t.Fatalf("manifest: %v %s", err, text)
	}
	if manifest["MapRunArn"] != "arn:aws:states:local:000000000000:mapRun:M/rows:p/Rows#1.0" || manifest["DestinationBucket"] != "out" {
		t.Errorf("manifest %s", text)
	}
	var ok, failed []map[string]any
	readJSON(t, filepath.Join(out, "results/Rows#1.0/SUCCEEDED_0.json"), &ok)
	readJSON(t, filepath.Join(out, "results/Rows#1.0/FAILED_0.json"), &failed)
	if len(ok) != 2 || len(failed) != 1 || failed[0]["Error"] != "Batch.Bad" || ok[0]["Name"] != "p/Rows#1.0:0" || ok[0]["Status"] != "SUCCEEDED" {
		t.Errorf("results: %v / %v", ok, failed)
	}
	if s, _ := ok[1]["Output"].(string); s != `{"ids":["r6"],"run":"r"}` {
		t.Errorf("second success Output = %q", s)
	}
	runs, _ := x.MapRuns(context.Background(), "p")
	if len(runs) != 1 || runs[0].ResultWriterDetails == nil {
		t.Errorf("MapRuns = %+v, want the ResultWriterDetails", runs)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(text, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestDistributedMapResume stops the process (a cancelled context) after
// some children finished, resumes the parent, and checks that it ends as
// an uninterrupted run and that no finished child ran again.
func TestDistributedMapResume(t *testing.T) {
	in := t.TempDir()
	writeRows(t, in, 30, map[int]bool{4: true})
	m := mustParse(t, fmt.Sprintf(distributedDef, 2, ""))
	clean := &batchAgent{calls: map[string]int{}}
	want, err := engine.New(engine.Config{Agents: distRegistry(t, clean, in, ""), Store: store.NewMemory()}).
		Run(context.Background(), m, mustJSON(t, `{"run":"r"}`), engine.StartOptions{ID: "p"})
	if err != nil || want.Status != engine.StatusSucceeded {
		t.Fatalf("uninterrupted: %+v %v", want, err)
	}
	st := store.NewMemory()
	ctx, cancel := context.WithCancel(context.Background())
	a := &batchAgent{calls: map[string]int{}, crashAfter: 5, cancel: cancel}
	x := engine.New(engine.Config{Agents: distRegistry(t, a, in, ""), Store: st})
	if _, err := x.Run(ctx, m, mustJSON(t, `{"run":"r"}`), engine.StartOptions{ID: "p"}); err == nil {
		t.Fatal("Run after the crash returned no error")
	}
	finished := map[string]bool{}
	for i := range 10 {
		id := engine.ChildID("p/Rows#1.0", i)
		if e, err := st.Load(context.Background(), id); err == nil && e.Status.Ended() {
			finished[id] = true
		}
	}
	if len(finished) == 0 || len(finished) == 10 {
		t.Fatalf("%d children finished before the crash, want some but not all", len(finished))
	}
	// Calls cut short by the crash may still be returning: read under the
	// agent's lock.
	a.mu.Lock()
	before := map[string]int{}
	for k, v := range a.calls {
		before[k] = v
	}
	a.crashAfter = 0
	a.mu.Unlock()
	got, err := x.Resume(context.Background(), "p", engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gotJSON, _ := json.Marshal(got.Output)
	wantJSON, _ := json.Marshal(want.Output)
	if got.Status != want.Status || string(gotJSON) != string(wantJSON) {
		t.Errorf("resumed %s %s, want %s %s", got.Status, gotJSON, want.Status, wantJSON)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for id := range finished {
		if a.calls[id] != before[id] {
			t.Errorf("finished child %s ran again (%d calls, %d before the resume)", id, a.calls[id], before[id])
		}
	}
}

func TestDistributedMapReaderFailures(t *testing.T) {
	in := t.TempDir()
	os.WriteFile(filepath.Join(in, "rows.csv"), []byte("id,fail\nr0,no,extra\n"), 0o644)
	cases := []struct {
		name, def, input, err, cause string
	}{
		{"bad row", fmt.Sprintf(distributedDef, 0, ""), `{"run":"r"}`, "States.ItemReaderFailed", "line 2"},
		{"unknown bucket", strings.Replace(fmt.Sprintf(distributedDef, 0, ""), "s3://in", "nowhere", 1), `{"run":"r"}`, "States.ItemReaderFailed", `bucket "nowhere", which is not configured`},
		{"missing object", strings.Replace(fmt.Sprintf(distributedDef, 0, ""), "rows.csv", "none.csv", 1), `{"run":"r"}`, "States.ItemReaderFailed", "none.csv"},
		{"unknown resultWriter bucket", fmt.Sprintf(distributedDef, 0, strings.Replace(resultWriter, `"out"`, `"gone"`, 1)), `{"run":"r"}`, "States.ResultWriterFailed", `"gone"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := engine.New(engine.Config{Agents: distRegistry(t, &batchAgent{calls: map[string]int{}}, in, ""), Store: store.NewMemory()})
			res, err := x.Run(context.Background(), mustParse(t, c.def), mustJSON(t, c.input), engine.StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != engine.StatusFailed || res.Error != c.err || !strings.Contains(res.Cause, c.cause) {
				t.Errorf("Run = %s %s %q, want %s with a cause containing %q", res.Status, res.Error, res.Cause, c.err, c.cause)
			}
		})
	}
}

func TestMapRunsRefusals(t *testing.T) {
	x := engine.New(engine.Config{})
	if _, err := x.MapRuns(context.Background(), "p"); !errors.Is(err, engine.ErrNotDurable) {
		t.Errorf("MapRuns without a store = %v, want ErrNotDurable", err)
	}
	y := engine.New(engine.Config{Store: store.NewMemory()})
	if _, err := y.MapRuns(context.Background(), "nope"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("MapRuns of nothing = %v, want ErrNotFound", err)
	}
}

// TestDistributedMapWriterConfig applies a ResultWriter's WriterConfig:
// to the files written, and, alone, to the Map's result.
func TestDistributedMapWriterConfig(t *testing.T) {
	in := t.TempDir()
	writeRows(t, in, 5, map[int]bool{3: true})
	flat := strings.Replace(fmt.Sprintf(distributedDef, 1, `"ResultWriter":{"WriterConfig":{"Transformation":"FLATTEN"}},`),
		`"Work":{"Type":"Task","Agent":"Work","End":true}`, `"Work":{"Type":"Task","Agent":"Work","OutputPath":"$.ids","End":true}`, 1)
	cases := []struct {
		name, writer, file, want string
	}{
		{"compact jsonl", `"ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"out","Prefix":"r"},"WriterConfig":{"OutputType":"JSONL","Transformation":"COMPACT"}},`,
			"r/Rows#1.0/SUCCEEDED_0.jsonl", "{\"ids\":[\"r0\",\"r1\",\"r2\"],\"run\":\"x\"}\n"},
		{"none json", `"ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"out","Prefix":"r"},"WriterConfig":{"OutputType":"JSON","Transformation":"NONE"}},`,
			"r/Rows#1.0/FAILED_0.json", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			x := engine.New(engine.Config{Agents: distRegistry(t, &batchAgent{calls: map[string]int{}}, in, out), Store: store.NewMemory()})
			res, err := x.Run(context.Background(), mustParse(t, fmt.Sprintf(distributedDef, 1, c.writer)), mustJSON(t, `{"run":"x"}`), engine.StartOptions{ID: "p"})
			if err != nil || res.Status != engine.StatusSucceeded {
				t.Fatalf("Run = %+v, %v", res, err)
			}
			text, err := os.ReadFile(filepath.Join(out, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if c.want != "" && string(text) != c.want {
				t.Errorf("%s = %q, want %q", c.file, text, c.want)
			}
			if c.want == "" && !strings.Contains(string(text), `"Error":"Batch.Bad"`) {
				t.Errorf("%s = %s, want the failed child's record", c.file, text)
			}
		})
	}
	t.Run("writer config alone", func(t *testing.T) {
		for _, st := range []engine.Store{store.NewMemory(), nil} {
			x := engine.New(engine.Config{Agents: distRegistry(t, &batchAgent{calls: map[string]int{}}, in, ""), Store: st})
			res, err := x.Run(context.Background(), mustParse(t, flat), mustJSON(t, `{"run":"x"}`), engine.StartOptions{})
			if err != nil || res.Status != engine.StatusSucceeded {
				t.Fatalf("Run = %+v, %v", res, err)
			}
			arr, ok := res.Output.([]any)
			if !ok || len(arr) != 4 {
				t.Fatalf("output %v, want the 3 ids of the first batch, then the failed batch's record", res.Output)
			}
			got, _ := json.Marshal(arr[:3])
			failed, _ := arr[3].(map[string]any)
			if string(got) != `["r0","r1","r2"]` || failed["Status"] != "FAILED" || failed["Error"] != "Batch.Bad" {
				t.Errorf("output %v", res.Output)
			}
		}
	})
}

func TestMapRunOf(t *testing.T) {
	cases := []struct {
		id, parent, want string
		ok               bool
	}{
		{"p/Rows#1.0:3", "p", "p/Rows#1.0", true},
		{"p/Outer#1.0/2/Rows#1.0:0", "p", "p/Outer#1.0/2/Rows#1.0", true},
		{engine.ChildID("a/b/Rows#2.1", 41), "a/b", "a/b/Rows#2.1", true},
		{"forked", "p", "", false},
		{"p/Rows#1.0:03", "p", "", false},
		{"p/Rows#1.0:-1", "p", "", false},
		{"p/Rows#1.0:x", "p", "", false},
		{"p/Rows:3", "p", "", false},
		{"p/Rows#1.0:3", "", "", false},
		{"q/Rows#1.0:3", "p", "", false},
	}
	for _, c := range cases {
		got, ok := engine.MapRunOf(c.id, c.parent)
		if got != c.want || ok != c.ok {
			t.Errorf("MapRunOf(%q, %q) = %q, %v; want %q, %v", c.id, c.parent, got, ok, c.want, c.ok)
		}
	}
}

// FuzzMapRunOf: MapRunOf never panics, finds the map run of every child
// id ChildID makes, and what it finds is a prefix of the id under parent.
func FuzzMapRunOf(f *testing.F) {
	f.Add("p/Rows#1.0:3", "p", 7)
	f.Add("a:b/c#:1", "a:b", 0)
	f.Add("", "", -1)
	f.Fuzz(func(t *testing.T, id, parent string, n int) {
		if mr, ok := engine.MapRunOf(id, parent); ok {
			if !strings.HasPrefix(mr, parent+"/") || !strings.HasPrefix(id, mr+":") {
				t.Errorf("MapRunOf(%q, %q) = %q", id, parent, mr)
			}
		}
		if n < 0 || parent == "" || strings.Contains(id, ":") {
			return
		}
		mr := parent + "/" + id + "#1.0"
		if got, ok := engine.MapRunOf(engine.ChildID(mr, n), parent); !ok || got != mr {
			t.Errorf("MapRunOf(ChildID(%q, %d), %q) = %q, %v", mr, n, parent, got, ok)
		}
	})
}

// BenchmarkMapRunChildrenPage reads pages of a map run of 1,000
// children: the first 100, and the failed ones (none: every child read).
func BenchmarkMapRunChildrenPage(b *testing.B) {
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	m, err := states.Parse([]byte(`{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemsPath":"$.items","ResultPath":null,
		"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"},"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`))
	if err != nil {
		b.Fatal(err)
	}
	items := make([]any, 1000)
	for i := range items {
		items[i] = jsonvalue.IntNumber(int64(i))
	}
	if res, err := x.Run(context.Background(), m, map[string]any{"items": items}, engine.StartOptions{ID: "p"}); err != nil || res.Status != engine.StatusSucceeded {
		b.Fatalf("Run = %+v, %v", res, err)
	}
	for _, c := range []struct {
		name string
		page engine.ChildrenPage
	}{{"first100", engine.ChildrenPage{Limit: 100}}, {"failed", engine.ChildrenPage{Status: engine.StatusFailed, Limit: 20}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := x.MapRunChildrenPage(context.Background(), "p/Each#1.0", c.page); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
