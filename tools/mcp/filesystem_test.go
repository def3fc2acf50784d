package mcp

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// filesystemServer is the entry point of the npm package
// @modelcontextprotocol/server-filesystem, pinned in testdata/npm and
// installed there by `npm ci` (.ci/run does it).
const filesystemServer = "testdata/npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"

// TestMCPFilesystemServer runs the reference filesystem server from npm:
// a third-party server this package did not write.
func TestMCPFilesystemServer(t *testing.T) {
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filesystemServer)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the filesystem MCP server cannot run (.ci/run installs node and runs npm ci in testdata/npm): %v", err)
		}
		t.Skipf("the filesystem MCP server is not installed (run npm ci --ignore-scripts in tools/mcp/testdata/npm): %v", err)
	}
	entry, err := filepath.Abs(filesystemServer)
	if err != nil {
		t.Fatal(err)
	}
	// The server resolves symbolic links; so must the test's paths.
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("not for the server"), 0o600); err != nil {
		t.Fatal(err)
	}

	s := startTest(t, ServerConfig{
		Name:     "fs",
		Command:  []string{node, entry, dir},
		PathArgs: map[string][]string{"read_text_file": {"path"}, "write_file": {"path"}},
	}, nil)
	var names []string
	for _, tl := range s.Tools() {
		names = append(names, tl.Name)
	}
	for _, want := range []string{"fs.read_text_file", "fs.write_file", "fs.list_directory"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v: no %s", names, want)
		}
	}

	ctx := context.Background()
	file := filepath.Join(dir, "note.txt")
	if _, err := tool(t, s, "fs.write_file").Call(ctx, nil, map[string]any{"path": file, "content": "written over MCP"}); err != nil {
		t.Fatalf("write_file: %v", err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "written over MCP" {
		t.Errorf("the file holds %q, %v; want written over MCP", b, err)
	}
	got, err := tool(t, s, "fs.read_text_file").Call(ctx, nil, map[string]any{"path": file})
	if err != nil {
		t.Fatalf("read_text_file: %v", err)
	}
	// The server gives structured content {"content": text}.
	if m, ok := got.(map[string]any); !ok || m["content"] != "written over MCP" {
		t.Errorf("read_text_file = %#v, want {content: written over MCP}", got)
	}

	// The server refuses a path outside its directory.
	_, err = tool(t, s, "fs.read_text_file").Call(ctx, nil, map[string]any{"path": secret})
	t.Log(toolError(t, err))
}
