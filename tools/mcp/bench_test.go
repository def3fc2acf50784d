package mcp

import (
	"context"
	"testing"
)

// BenchmarkMCPStdioCall calls the echo tool through a stdio server (a
// JSON-RPC round trip over pipes to another process) against calling its
// handler directly, which is the cost of the tool itself.
func BenchmarkMCPStdioCall(b *testing.B) {
	input := map[string]any{"text": "hello"}
	b.Run("stdio", func(b *testing.B) {
		s := startTest(b, testConfig("t"), nil)
		echoTool := tool(b, s, "t.echo")
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := echoTool.Call(ctx, nil, input); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			res, _, err := echo(ctx, nil, echoIn{Text: input["text"].(string)})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := result("t", "echo", res); err != nil {
				b.Fatal(err)
			}
		}
	})
}
