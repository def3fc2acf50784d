package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// TestRun runs both phases small, on the memory store: the Map ends, the
// small executions all succeed, and the report says what it measured.
func TestRun(t *testing.T) {
	rows, kind, err := run(2000, 0, 5, time.Millisecond, false, "memory", "")
	if err != nil {
		t.Fatal(err)
	}
	if kind != "memory" || len(rows) != 2 {
		t.Fatalf("store %q, %d rows; want memory and 2", kind, len(rows))
	}
	alone, beside := rows[0], rows[1]
	if alone.Executions != 5 || beside.Executions < 5 {
		t.Errorf("%d and %d small executions, want 5 and at least 5", alone.Executions, beside.Executions)
	}
	if alone.Gets < alone.Executions || alone.RunMax < alone.RunP50 || beside.MapSeconds <= 0 {
		t.Errorf("figures that cannot be: %+v %+v", alone, beside)
	}
	var out bytes.Buffer
	if err := report(&out, rows, kind, time.Millisecond, true); err != nil {
		t.Fatal(err)
	}
	var back []row
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || len(back) != 2 || back[1].Phase != "beside a Map of 2000 items" {
		t.Errorf("the JSON report %s (%v)", out.Bytes(), err)
	}
}
