package files_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/tools/files"
)

// BenchmarkRead reads a 1 KiB file through the tool (input checks, the
// state's limits, a fresh os.Root, stat, bounded read, UTF-8 check)
// against os.ReadFile, the cost of the read itself.
func BenchmarkRead(b *testing.B) {
	root := b.TempDir()
	name := filepath.Join(root, "notes", "a.md")
	write(b, name, strings.Repeat("abcdefgh", 128))
	b.Run("tool", func(b *testing.B) {
		tool := newTool(b, files.Config{Root: root})
		ctx := agents.WithToolLimits(context.Background(), &agents.ToolLimits{State: "S",
			Files: &agents.FileLimits{AllowedPaths: []string{"notes/**"}, DeniedPaths: []string{"secrets/**"}}})
		req := &agents.Request{Input: in("read", "notes/a.md")}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tool.Invoke(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("os.ReadFile", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := os.ReadFile(name); err != nil {
				b.Fatal(err)
			}
		}
	})
}
