package files_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/tools/files"
)

func Example() {
	root, err := os.MkdirTemp("", "files-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(root)
	os.MkdirAll(filepath.Join(root, "secrets"), 0o755)
	os.WriteFile(filepath.Join(root, "secrets", "k.pem"), []byte("key"), 0o600)

	// The server's owner grants the folder and the operations.
	tool, err := files.New(files.Config{Root: root, Operations: []string{"read", "write", "list"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The engine puts the state's Tools block FileSystem in the context.
	ctx := agents.WithToolLimits(context.Background(), &agents.ToolLimits{
		State: "Draft",
		Files: &agents.FileLimits{DeniedPaths: []string{"secrets/**"}, AllowedExtensions: []string{".md"}},
	})
	call := func(input string) {
		v, _ := jsonvalue.Decode([]byte(input))
		out, err := tool.Invoke(ctx, &agents.Request{State: "Draft", Input: v})
		if err != nil {
			fmt.Println(err)
			return
		}
		data, _ := jsonvalue.Marshal(out)
		fmt.Println(string(data))
	}
	call(`{"operation": "write", "path": "notes/plan.md", "content": "# Plan"}`)
	call(`{"operation": "read", "path": "notes/plan.md"}`)
	call(`{"operation": "list", "path": "."}`)
	call(`{"operation": "read", "path": "secrets/k.pem"}`)
	call(`{"operation": "read", "path": "../etc/passwd"}`)
	// Output:
	// {"path":"notes/plan.md","size":6}
	// {"content":"# Plan","path":"notes/plan.md","size":6}
	// {"entries":[{"name":"notes","type":"dir"}],"path":"."}
	// States.Permissions: file tool in state "Draft": path "secrets/k.pem" matches the FileSystem.DeniedPaths glob "secrets/**"
	// States.Permissions: file tool in state "Draft": path "../etc/passwd" escapes the tool's root
}
