package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// TestDistributedMapFileBuckets runs definitions naming local folders
// (file://) and computed buckets: an executor refuses file:// unless its
// BucketAccess allows it, failing the state with the reader's or the
// writer's error named after the bucket and the state, and writes
// nothing.
func TestDistributedMapFileBuckets(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	writeRows(t, in, 4, nil)
	def := fmt.Sprintf(distributedDef, 0, "")
	computed := strings.Replace(def, `"Bucket":"s3://in"`, `"Bucket.$":"$.bucket"`, 1)
	for _, c := range []struct {
		name, def, input string
		allow            bool
		err, cause       string // err "" for success
	}{
		{"file reader refused", strings.Replace(def, "s3://in", "file://"+in, 1), `{"run":"r"}`, false, "States.ItemReaderFailed", `The ItemReader of the state 'Rows' names the local folder "file://` + in + `"`},
		{"relative file reader refused", strings.Replace(def, "s3://in", "file://../..", 1), `{"run":"r"}`, false, "States.ItemReaderFailed", `"file://../.."`},
		{"file writer refused", fmt.Sprintf(distributedDef, 0, strings.Replace(resultWriter, `"out"`, `"file://`+out+`"`, 1)), `{"run":"r"}`, false, "States.ResultWriterFailed", `The ResultWriter of the state 'Rows' names the local folder`},
		{"computed file refused", computed, `{"run":"r","bucket":"file:///etc"}`, false, "States.ItemReaderFailed", `"file:///etc"`},
		{"computed unmapped", computed, `{"run":"r","bucket":"etc"}`, false, "States.ItemReaderFailed", `The ItemReader of the state 'Rows' names bucket "etc", which is not configured`},
		{"computed mapped", computed, `{"run":"r","bucket":"in"}`, false, "", ""},
		{"file allowed", strings.Replace(def, "s3://in", "file://"+in, 1), `{"run":"r"}`, true, "", ""},
		{"file writer allowed", fmt.Sprintf(distributedDef, 0, strings.Replace(resultWriter, `"out"`, `"file://`+out+`"`, 1)), `{"run":"r"}`, true, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := engine.New(engine.Config{Agents: distRegistry(t, &batchAgent{calls: map[string]int{}}, in, ""), Store: store.NewMemory(),
				Buckets: engine.BucketAccess{AllowFileURLs: c.allow}})
			res, err := x.Run(context.Background(), mustParse(t, c.def), mustJSON(t, c.input), engine.StartOptions{ID: "p"})
			if err != nil {
				t.Fatal(err)
			}
			if c.err == "" {
				if res.Status != engine.StatusSucceeded {
					t.Errorf("Run = %s %s %q, want SUCCEEDED", res.Status, res.Error, res.Cause)
				}
				return
			}
			if res.Status != engine.StatusFailed || res.Error != c.err || !strings.Contains(res.Cause, c.cause) {
				t.Errorf("Run = %s %s %q, want %s with a cause containing %q", res.Status, res.Error, res.Cause, c.err, c.cause)
			}
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Errorf("the refused run wrote %v", entries)
			}
		})
	}
}

// TestDistributedMapReaderLimits fails a reader at the executor's item
// and listing limits, naming the bucket, key or prefix, line and limit.
func TestDistributedMapReaderLimits(t *testing.T) {
	in := t.TempDir()
	writeRows(t, in, 4, nil)
	os.WriteFile(filepath.Join(in, "long.csv"), []byte("id,fail\nr0,no\nr1,"+strings.Repeat("n", 200)+"\n"), 0o644)
	list := `{"StartAt":"Rows","States":{"Rows":{"Type":"Map",
		"ItemReader":{"Resource":"arn:aws:states:::s3:listObjectsV2","Parameters":{"Bucket":"in","Prefix":""}%s},
		"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"},"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`
	for _, c := range []struct {
		name   string
		def    string
		access engine.BucketAccess
		err    string
		cause  []string
	}{
		{"row over the limit", strings.Replace(fmt.Sprintf(distributedDef, 0, ""), "rows.csv", "long.csv", 1), engine.BucketAccess{MaxItemBytes: 100}, "States.ItemReaderFailed",
			[]string{`'Rows'`, `key "long.csv"`, `bucket "in"`, "line 3", "limit of 100 bytes"}},
		{"rows within the limit", fmt.Sprintf(distributedDef, 0, ""), engine.BucketAccess{MaxItemBytes: 100}, "", nil},
		{"listing over the limit", fmt.Sprintf(list, ""), engine.BucketAccess{MaxListedObjects: 1}, "States.ItemReaderFailed",
			[]string{`'Rows'`, `bucket "in"`, `prefix ""`, "more than 1 objects"}},
		{"listing cut by MaxItems", fmt.Sprintf(list, `,"ReaderConfig":{"MaxItems":1}`), engine.BucketAccess{MaxListedObjects: 1}, "", nil},
		{"listing within the limit", fmt.Sprintf(list, ""), engine.BucketAccess{MaxListedObjects: 2}, "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := engine.New(engine.Config{Agents: distRegistry(t, &batchAgent{calls: map[string]int{}}, in, ""), Store: store.NewMemory(), Buckets: c.access})
			res, err := x.Run(context.Background(), mustParse(t, c.def), mustJSON(t, `{"run":"r"}`), engine.StartOptions{ID: "p"})
			if err != nil {
				t.Fatal(err)
			}
			if c.err == "" {
				if res.Status != engine.StatusSucceeded {
					t.Errorf("Run = %s %s %q, want SUCCEEDED", res.Status, res.Error, res.Cause)
				}
				return
			}
			if res.Status != engine.StatusFailed || res.Error != c.err {
				t.Errorf("Run = %s %s %q, want %s", res.Status, res.Error, res.Cause, c.err)
			}
			for _, s := range c.cause {
				if !strings.Contains(res.Cause, s) {
					t.Errorf("cause %q does not say %q", res.Cause, s)
				}
			}
		})
	}
}

// TestMapRunBuckets records where a map run read and wrote.
func TestMapRunBuckets(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	writeRows(t, in, 4, nil)
	x := engine.New(engine.Config{Agents: distRegistry(t, &batchAgent{calls: map[string]int{}}, in, out), Store: store.NewMemory()})
	res, err := x.Run(context.Background(), mustParse(t, fmt.Sprintf(distributedDef, 0, resultWriter)), mustJSON(t, `{"run":"r"}`), engine.StartOptions{ID: "p"})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	runs, err := x.MapRuns(context.Background(), "p")
	if err != nil || len(runs) != 1 {
		t.Fatalf("MapRuns = %+v, %v", runs, err)
	}
	if got, want := runs[0].Reads, (engine.MapRunBucket{Bucket: "in", Key: "rows.csv"}); got != want {
		t.Errorf("Reads = %+v, want %+v", got, want)
	}
	if got, want := runs[0].Writes, (engine.MapRunBucket{Bucket: "out", Prefix: "results"}); got != want {
		t.Errorf("Writes = %+v, want %+v", got, want)
	}
}

// TestDistributedMapWriterPrefix refuses a ResultWriter Prefix that
// would leave its folder before any child runs.
func TestDistributedMapWriterPrefix(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	writeRows(t, in, 4, nil)
	for _, prefix := range []string{"../escape", "a/../../escape", "/abs"} {
		a := &batchAgent{calls: map[string]int{}}
		x := engine.New(engine.Config{Agents: distRegistry(t, a, in, out), Store: store.NewMemory()})
		def := fmt.Sprintf(distributedDef, 0, strings.Replace(resultWriter, `"results"`, `"`+prefix+`"`, 1))
		res, err := x.Run(context.Background(), mustParse(t, def), mustJSON(t, `{"run":"r"}`), engine.StartOptions{ID: "p"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != engine.StatusFailed || res.Error != "States.ResultWriterFailed" || !strings.Contains(res.Cause, `the Prefix "`+prefix+`"`) {
			t.Errorf("Prefix %q: Run = %s %s %q, want States.ResultWriterFailed naming the Prefix", prefix, res.Status, res.Error, res.Cause)
		}
		if n := a.count("p/Rows#1.0:0"); n != 0 {
			t.Errorf("Prefix %q: a child ran (%d calls)", prefix, n)
		}
	}
}
