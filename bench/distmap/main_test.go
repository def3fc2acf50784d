package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDistributedMapBench runs the command on a small file and checks what
// it reports against what it wrote.
func TestDistributedMapBench(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"-rows", "250", "-batch", "100", "-concurrency", "2", "-dir", dir}, &out, &errOut)
	if err != nil {
		t.Fatalf("%v: %s", err, errOut.String())
	}
	var r result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if r.Status != "SUCCEEDED" || r.Rows != 250 || r.DBBytes <= 0 || r.PeakRSS <= 0 || r.Seconds <= 0 {
		t.Errorf("got %+v", r)
	}
	manifest, err := os.ReadFile(filepath.Join(dir, "out", "results", "Rows#1.0", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(manifest), "SUCCEEDED_0.json") {
		t.Errorf("manifest %s names no SUCCEEDED file", manifest)
	}
	results, err := os.ReadFile(filepath.Join(dir, "out", "results", "Rows#1.0", "SUCCEEDED_0.json"))
	if err != nil {
		t.Fatal(err)
	}
	var children []map[string]any
	if err := json.Unmarshal(results, &children); err != nil || len(children) != 3 {
		t.Errorf("%d children in SUCCEEDED_0.json (%v), want 3 batches", len(children), err)
	}
}

// TestDistributedMapBenchRefuses: bad flags are refused, naming them.
func TestDistributedMapBenchRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-rows", "10"}, "-dir"},
		{[]string{"-dir", dir, "-rows", "0"}, "-rows"},
		{[]string{"-dir", dir, "-rows", "10", "-store", "sqlite"}, `-store "sqlite"`},
		{[]string{"-dir", dir, "-rows", "10", "-durability", "none"}, `-durability "none"`},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), tc.args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
}
