package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/itemio"
)

// bucketFlow reads the CSV Key of Bucket (JSONPath: written literally,
// or "Bucket.$" for a computed one) in a Distributed Map whose children
// pass their item on; writer is the ResultWriter, if any.
func bucketFlow(bucket, key, writer string) string {
	return `{"StartAt":"M","States":{"M":{"Type":"Map","Label":"rows",
		"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"CSV"},"Parameters":{` + bucket + `,"Key":"` + key + `"}},` + writer + `
		"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"},"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`
}

// escapeServer is a server whose agents map the bucket "data" to a
// folder holding rows.csv, links pointing out of it (to a secret file
// and a folder beside it, to /etc, to /dev/zero and to its parent), a
// FIFO and a sparse 3 GB file of one line; it returns the server and the
// folder holding the bucket's.
func escapeServer(t *testing.T) (*testServer, string) {
	t.Helper()
	top := t.TempDir()
	data := filepath.Join(top, "data")
	os.Mkdir(data, 0o755)
	os.WriteFile(filepath.Join(data, "rows.csv"), []byte("id\nr0\nr1\n"), 0o644)
	os.WriteFile(filepath.Join(top, "secret.csv"), []byte("SECRET\nSECRET-ROW\n"), 0o600)
	os.Mkdir(filepath.Join(top, "outside"), 0o755)
	for name, target := range map[string]string{"escape.csv": filepath.Join(top, "secret.csv"), "etc": "/etc", "zero.csv": "/dev/zero", "up": "..", "outdir": filepath.Join(top, "outside")} {
		if err := os.Symlink(target, filepath.Join(data, name)); err != nil {
			t.Skipf("symbolic links: %v", err)
		}
	}
	if runtime.GOOS != "windows" {
		if err := syscall.Mkfifo(filepath.Join(data, "pipe.csv"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	huge := filepath.Join(data, "huge.csv")
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 3<<30); err != nil {
		t.Skipf("sparse file: %v", err)
	}
	reg := agents.NewRegistry()
	if err := reg.RegisterBucket("data", itemio.Dir(data)); err != nil {
		t.Fatal(err)
	}
	return newTestServer(t, func(c *Config) { c.Agents = reg }), top
}

// TestFileBucketsRefused: an operator's inline definition or workflow
// naming a local folder (absolute, relative, for reading, listing or
// writing) is refused with a 400 naming the Bucket's pointer, and nothing
// is read or written.
func TestFileBucketsRefused(t *testing.T) {
	ts, top := escapeServer(t)
	list := `{"StartAt":"M","States":{"M":{"Type":"Map",
		"ItemReader":{"Resource":"arn:aws:states:::s3:listObjectsV2","Parameters":{"Bucket":"file:///root"}},
		"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"},"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`
	writer := `"ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"file://` + top + `/escape","Prefix":"out"}},`
	jsonata := `{"QueryLanguage":"JSONata","StartAt":"M","States":{"M":{"Type":"Map",
		"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"CSV"},"Arguments":{"Bucket":"file:///proc/self","Key":"environ"}},
		"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"},"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`
	for _, c := range []struct {
		name, def, pointer string
	}{
		{"absolute", bucketFlow(`"Bucket":"file:///etc"`, "shadow", ""), "/definition/States/M/ItemReader/Parameters/Bucket"},
		{"relative", bucketFlow(`"Bucket":"file://../.."`, "etc/passwd", ""), "/definition/States/M/ItemReader/Parameters/Bucket"},
		{"listing", list, "/definition/States/M/ItemReader/Parameters/Bucket"},
		{"writer", bucketFlow(`"Bucket":"data"`, "rows.csv", writer), "/definition/States/M/ResultWriter/Parameters/Bucket"},
		{"jsonata", jsonata, "/definition/States/M/ItemReader/Arguments/Bucket"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Registering a workflow needs an admin, who is refused too.
			for _, req := range []struct {
				role Role
				path string
				body map[string]any
			}{
				{RoleOperator, "/v1/executions", map[string]any{"definition": json.RawMessage(c.def), "name": "x-" + c.name}},
				{RoleAdmin, "/v1/executions", map[string]any{"definition": json.RawMessage(c.def), "name": "x-" + c.name}},
				{RoleAdmin, "/v1/workflows", map[string]any{"definition": json.RawMessage(c.def), "name": "w-" + c.name}},
			} {
				code, body := ts.call(t, req.role, "POST", req.path, req.body, nil)
				if code != http.StatusBadRequest {
					t.Fatalf("POST %s: %d %s, want 400", req.path, code, body)
				}
				p := problemIn(t, body)
				if len(p.Errors) != 1 || p.Errors[0].Pointer != c.pointer || p.Errors[0].State != "M" {
					t.Errorf("POST %s: problem %+v, want one at %s", req.path, p, c.pointer)
				}
			}
			var v api.Validation
			if code, body := ts.call(t, RoleViewer, "POST", "/v1/workflows/validate", map[string]any{"definition": json.RawMessage(c.def)}, &v); code != http.StatusOK || v.Valid || len(v.Problems) != 1 || v.Problems[0].Pointer != c.pointer {
				t.Errorf("validate: %d %s, want invalid at %s", code, body, c.pointer)
			}
			if code, _ := ts.call(t, RoleViewer, "GET", "/v1/executions/x-"+c.name, nil, nil); code != http.StatusNotFound {
				t.Errorf("the refused execution exists (%d)", code)
			}
		})
	}
	if _, err := os.Lstat(filepath.Join(top, "escape")); err == nil {
		t.Error("the folder the refused writer named was written")
	}
}

// TestBucketEscapesFail: definitions naming the mapped bucket, or a
// computed one, that try to leave its folder fail their Map state with
// States.ItemReaderFailed or States.ResultWriterFailed, reading and
// writing nothing outside it.
func TestBucketEscapesFail(t *testing.T) {
	ts, top := escapeServer(t)
	for i, c := range []struct {
		name, def, input, err, cause string
	}{
		{"computed file", bucketFlow(`"Bucket.$":"$.b"`, "passwd", ""), `{"b":"file:///etc"}`, "States.ItemReaderFailed", `names the local folder "file:///etc"`},
		{"computed unmapped", bucketFlow(`"Bucket.$":"$.b"`, "passwd", ""), `{"b":"etc"}`, "States.ItemReaderFailed", `names bucket "etc", which is not configured`},
		{"link to a file outside", bucketFlow(`"Bucket":"data"`, "escape.csv", ""), `{}`, "States.ItemReaderFailed", `key "escape.csv" of bucket "data"`},
		{"link to /etc", bucketFlow(`"Bucket":"data"`, "etc/passwd", ""), `{}`, "States.ItemReaderFailed", `key "etc/passwd"`},
		{"link to the parent", bucketFlow(`"Bucket":"data"`, "up/secret.csv", ""), `{}`, "States.ItemReaderFailed", `key "up/secret.csv"`},
		{"dot dot", bucketFlow(`"Bucket":"data"`, "../secret.csv", ""), `{}`, "States.ItemReaderFailed", `leaves the folder`},
		{"absolute key", bucketFlow(`"Bucket":"data"`, "/etc/passwd", ""), `{}`, "States.ItemReaderFailed", `is absolute`},
		{"device link", bucketFlow(`"Bucket":"data"`, "zero.csv", ""), `{}`, "States.ItemReaderFailed", `key "zero.csv"`},
		{"fifo", bucketFlow(`"Bucket":"data"`, "pipe.csv", ""), `{}`, "States.ItemReaderFailed", `is a FIFO`},
		{"writer through a link", bucketFlow(`"Bucket":"data"`, "rows.csv", `"ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"data","Prefix":"outdir/escape"}},`), `{}`, "States.ResultWriterFailed", `bucket "data"`},
		{"writer up", bucketFlow(`"Bucket":"data"`, "rows.csv", `"ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"data","Prefix":"../escape"}},`), `{}`, "States.ResultWriterFailed", `leaves the folder`},
		{"writer through the parent link", bucketFlow(`"Bucket":"data"`, "rows.csv", `"ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"data","Prefix":"up/escape"}},`), `{}`, "States.ResultWriterFailed", `bucket "data"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := fmt.Sprintf("e%d", i)
			body := map[string]any{"definition": json.RawMessage(c.def), "name": id, "input": json.RawMessage(c.input)}
			if code, b := ts.call(t, RoleOperator, "POST", "/v1/executions", body, nil); code != http.StatusCreated {
				t.Fatalf("start: %d %s", code, b)
			}
			e := ts.waitFor(t, id, func(e api.Execution) bool { return e.Status != "RUNNING" })
			t.Logf("%s: %s", e.Error, e.Cause)
			if e.Status != "FAILED" || e.Error != c.err || !strings.Contains(e.Cause, c.cause) {
				t.Errorf("execution %s %s %q, want FAILED %s with a cause containing %q", e.Status, e.Error, e.Cause, c.err, c.cause)
			}
			if strings.Contains(e.Cause, "SECRET") || strings.Contains(e.Cause, top) {
				t.Errorf("the cause %q shows what is outside the bucket", e.Cause)
			}
		})
	}
	for _, p := range []string{filepath.Join(top, "outside", "escape"), filepath.Join(top, "escape")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}

// TestBucketOneLineBounded reads a sparse 3 GB CSV file of one line (no
// newline) from a mapped bucket: the state fails at the row limit with
// States.ItemReaderFailed, naming the bucket, key, line and limit, having
// allocated a few MiB in all.
func TestBucketOneLineBounded(t *testing.T) {
	ts, _ := escapeServer(t)
	body := map[string]any{"definition": json.RawMessage(bucketFlow(`"Bucket":"data"`, "huge.csv", "")), "name": "huge"}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if code, b := ts.call(t, RoleOperator, "POST", "/v1/executions", body, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, b)
	}
	e := ts.waitFor(t, "huge", func(e api.Execution) bool { return e.Status != "RUNNING" })
	runtime.ReadMemStats(&after)
	for _, want := range []string{`key "huge.csv" of bucket "data"`, "line 1", "limit of 1048576 bytes"} {
		if e.Status != "FAILED" || e.Error != "States.ItemReaderFailed" || !strings.Contains(e.Cause, want) {
			t.Errorf("execution %s %s %q, want FAILED States.ItemReaderFailed saying %q", e.Status, e.Error, e.Cause, want)
		}
	}
	grew := after.TotalAlloc - before.TotalAlloc
	t.Logf("%s after the server allocated %d KiB in all", e.Cause, grew>>10)
	if grew > 64<<20 {
		t.Errorf("the server allocated %d MiB reading a one-line file, want at most 64", grew>>20)
	}
}

// TestExecutionPageMapRunBuckets: the page of an execution shows the
// buckets its map run read and wrote.
func TestExecutionPageMapRunBuckets(t *testing.T) {
	ts, _ := escapeServer(t)
	writer := `"ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"data","Prefix":"results"}},`
	body := map[string]any{"definition": json.RawMessage(bucketFlow(`"Bucket":"data"`, "rows.csv", writer)), "name": "dm"}
	if code, b := ts.call(t, RoleOperator, "POST", "/v1/executions", body, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, b)
	}
	if e := ts.waitFor(t, "dm", func(e api.Execution) bool { return e.Status != "RUNNING" }); e.Status != "SUCCEEDED" {
		t.Fatalf("execution %s %s %q", e.Status, e.Error, e.Cause)
	}
	code, page, _ := ts.signedIn(t, RoleViewer).get(t, "/executions/dm")
	if code != http.StatusOK {
		t.Fatalf("page: %d", code)
	}
	section := between(t, page, `<section id="map-runs">`, `</section>`)
	for _, want := range []string{`<dd class="reads">bucket <code>data</code>, key <code>rows.csv</code></dd>`, `<dd class="writes">bucket <code>data</code>, prefix <code>results</code></dd>`} {
		if !strings.Contains(section, want) {
			t.Errorf("map runs section lacks %s:\n%s", want, section)
		}
	}
}
