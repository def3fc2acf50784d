package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aslrun/aslrun/tools/mcp"
)

type greetIn struct {
	Name string `json:"name"`
}

// An MCP server's tools become tools named "server.tool". Here the server
// is a streamable HTTP one in the same process; a stdio server is started
// with ServerConfig.Command instead.
func ExampleStart() {
	greeter := sdk.NewServer(&sdk.Implementation{Name: "greeter", Version: "1"}, nil)
	sdk.AddTool(greeter, &sdk.Tool{Name: "greet", Description: "Greets someone."},
		func(_ context.Context, _ *sdk.CallToolRequest, in greetIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "hello, " + in.Name}}}, nil, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return greeter }, nil))
	defer ts.Close()

	s, err := mcp.Start(context.Background(), mcp.ServerConfig{Name: "hello", URL: ts.URL}, ts.Client(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	for _, t := range s.Tools() {
		out, err := t.Call(context.Background(), nil, map[string]any{"name": "Ada"})
		fmt.Println(t.Name, t.Category, out, err)
	}
	// Output:
	// hello.greet mcp hello, Ada <nil>
}
