package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/itemio"
	"github.com/aslrun/aslrun/states"
)

// TestToolsLimitsReachTheCall: a tool call run through req.Tools.Run
// carries the state's Domains, FileSystem and Sandbox (its mounts'
// buckets resolved to their folders) in its context, and a call outside
// Run or of a state without them carries none.
func TestToolsLimitsReachTheCall(t *testing.T) {
	var seen *agents.ToolLimits
	var outside bool
	a := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		outside = agents.ToolLimitsFrom(ctx) != nil
		return req.Tools.Run(ctx, "search", nil, func(ctx context.Context, _ map[string]any) (any, error) {
			seen = agents.ToolLimitsFrom(ctx)
			return nil, nil
		})
	})
	dir := t.TempDir()
	reg := agents.NewRegistry()
	if err := reg.Register("A", a); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterBucket("corpus", itemio.Dir(dir)); err != nil {
		t.Fatal(err)
	}
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","End":true,"Tools":{
		"Domains":{"Allowed":["*.example.com"],"Denied":["x.example.com"]},
		"FileSystem":{"AllowedPaths":["notes/**"],"AllowedExtensions":["md"],"MaxFileSize":"1K"},
		"Sandbox":{"Memory":"64M","CPU":2,"Timeout":"5s","Mounts":{"/data":{"Source":"corpus","ReadOnly":true}}}}}}}`
	x := engine.New(engine.Config{Agents: reg})
	res, err := x.Run(context.Background(), mustParse(t, def), map[string]any{}, engine.StartOptions{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	wantOutput(t, res, `null`)
	if outside {
		t.Error("the agent's own context carries tool limits; only a tool call's should")
	}
	if seen == nil || seen.State != "T" {
		t.Fatalf("the tool call's limits = %+v, want the state T's", seen)
	}
	if d := seen.Domains; d == nil || !d.HasAllowed || d.Allowed[0] != "*.example.com" || d.Denied[0] != "x.example.com" {
		t.Errorf("Domains = %+v", d)
	}
	if f := seen.Files; f == nil || f.AllowedPaths[0] != "notes/**" || f.AllowedExtensions[0] != ".md" || f.MaxFileSize != 1024 {
		t.Errorf("Files = %+v", f)
	}
	sb := seen.Sandbox
	if sb == nil || sb.Memory != 64<<20 || sb.CPU.Seconds() != 2 || sb.Timeout.Seconds() != 5 || len(sb.Mounts) != 1 {
		t.Fatalf("Sandbox = %+v", sb)
	}
	if m := sb.Mounts[0]; m.Target != "/data" || m.Dir != dir || m.Bucket != "corpus" || !m.ReadOnly {
		t.Errorf("mount = %+v, want /data from the bucket corpus at %s, read-only", m, dir)
	}
}

// TestToolsSandboxRefusedAtStart: a workflow whose Sandbox mounts a
// bucket the owner did not map, or one that is not a folder, is refused
// before an execution exists, at the mount's pointer.
func TestToolsSandboxRefusedAtStart(t *testing.T) {
	reg := agents.NewRegistry()
	if err := reg.Register("A", agents.Func(func(context.Context, *agents.Request) (any, error) { return nil, nil })); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterBucket("remote", notADir{}); err != nil {
		t.Fatal(err)
	}
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","End":true,"Tools":{
		"Sandbox":{"Mounts":{"/a":{"Source":"nowhere"},"/b":{"Source":"remote"}}}}}}}`
	x := engine.New(engine.Config{Agents: reg})
	_, err := x.Run(context.Background(), mustParse(t, def), map[string]any{}, engine.StartOptions{})
	var list states.ErrorList
	if !errors.As(err, &list) || len(list) != 2 {
		t.Fatalf("Run = %v, want two problems", err)
	}
	for i, want := range []struct{ ptr, msg string }{
		{"/States/T/Tools/Sandbox/Mounts/~1a", `bucket "nowhere" is not configured`},
		{"/States/T/Tools/Sandbox/Mounts/~1b", `bucket "remote" is not a folder on this machine`},
	} {
		if list[i].Pointer != want.ptr || !strings.Contains(list[i].Msg, want.msg) {
			t.Errorf("problem %d = %s %s, want %s containing %q", i, list[i].Pointer, list[i].Msg, want.ptr, want.msg)
		}
	}
}

// notADir is a bucket that is not a folder.
type notADir struct{ itemio.Bucket }
