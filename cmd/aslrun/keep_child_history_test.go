package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeepChildHistoryFlag: `run` drops the history of a Distributed
// Map's child once it succeeded, `history` then lists no event of it;
// with --keep-child-history the child keeps its history.
func TestKeepChildHistoryFlag(t *testing.T) {
	dir := t.TempDir()
	flow := filepath.Join(dir, "flow.json")
	def := `{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemsPath":"$.items",
		"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"},"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}},"End":true}}}`
	if err := os.WriteFile(flow, []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		flags      []string
		wantEvents bool
	}{
		{"default", nil, false},
		{"kept", []string{"--keep-child-history"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "k.db")
			args := append([]string{"run", flow, "--input", `{"items":[1]}`, "--name", "dm", "--db", db}, c.flags...)
			if code, out, errOut := invoke(t, "", args...); code != 0 || out != "[\n  1\n]\n" {
				t.Fatalf("run: exit %d %q %s", code, out, errOut)
			}
			code, out, errOut := invoke(t, "", "history", "dm/Each#1.0:0", "--json", "--db", db)
			if code != 0 {
				t.Fatalf("history: exit %d %s", code, errOut)
			}
			var events []any
			if err := json.Unmarshal([]byte(out), &events); err != nil {
				t.Fatalf("history: %v in %s", err, out)
			}
			if (len(events) > 0) != c.wantEvents {
				t.Errorf("the child's history has %d events, want some: %v", len(events), c.wantEvents)
			}
			// status says whether the child's history was dropped.
			code, out, errOut = invoke(t, "", "status", "dm/Each#1.0:0", "--db", db)
			if dropped := strings.Contains(out, "history") && strings.Contains(out, "dropped"); code != 0 || dropped == c.wantEvents {
				t.Errorf("status of the child: exit %d, says dropped %t, want %t: %s%s", code, dropped, !c.wantEvents, out, errOut)
			}
			code, out, _ = invoke(t, "", "status", "dm/Each#1.0:0", "--json", "--db", db)
			var st map[string]any
			if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || (st["historyDropped"] == true) == c.wantEvents {
				t.Errorf("status --json of the child: exit %d, %v, historyDropped %v, want %t", code, err, st["historyDropped"], !c.wantEvents)
			}
			code, out, _ = invoke(t, "", "history", "dm", "--json", "--db", db)
			if err := json.Unmarshal([]byte(out), &events); code != 0 || err != nil || len(events) == 0 {
				t.Errorf("the parent's history: exit %d, %d events, %v", code, len(events), err)
			}
		})
	}
}
