package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aslrun/aslrun/tools"
)

// serveEnv makes the test binary an MCP server on its standard input and
// output, so that the tests can run it as a stdio server and kill it.
const serveEnv = "ASLRUN_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		say := func(s string) { fmt.Fprintln(os.Stderr, s) }
		if err := testServer(say).Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			say(err.Error())
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type echoIn struct {
	Text string `json:"text"`
}

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type addOut struct {
	Sum int `json:"sum"`
}

type addToolIn struct {
	Name string `json:"name"`
}

// echo is the echo tool's handler.
func echo(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
}

// testServer is the MCP server the tests talk to. say reports progress
// (on standard error for a stdio server, where the client logs it).
//
//   - echo {text}: the text
//   - add {a, b}: structured {sum}
//   - slow: says "slow: started", blocks until cancelled, says "slow: cancelled"
//   - crash: exits with status 3
//   - fail: a result marked IsError, "boom"
//   - mixed: a text and an image
//   - pid: the server's process id
//   - addtool {name}: adds a tool called name (which answers "added"), so
//     that the tool list changes
func testServer(say func(string)) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "aslrun-test", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Returns its text."}, echo)
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Adds two integers."},
		func(_ context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "slow", Description: "Blocks until cancelled."},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			say("slow: started")
			<-ctx.Done()
			say("slow: cancelled")
			return nil, nil, ctx.Err()
		})
	sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Exits the server."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Fails."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return nil, nil, errors.New("boom")
		})
	sdk.AddTool(s, &sdk.Tool{Name: "mixed", Description: "A text and an image."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "a picture"},
				&sdk.ImageContent{MIMEType: "image/png", Data: []byte{1, 2, 3}},
			}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "pid", Description: "The server's process id."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(os.Getpid())}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "addtool", Description: "Adds a tool."},
		func(_ context.Context, _ *sdk.CallToolRequest, in addToolIn) (*sdk.CallToolResult, any, error) {
			sdk.AddTool(s, &sdk.Tool{Name: in.Name, Description: "Added at run time."},
				func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
					return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "added"}}}, nil, nil
				})
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil, nil
		})
	return s
}

// testConfig runs the test binary as the stdio server named name.
func testConfig(name string) ServerConfig {
	return ServerConfig{
		Name:    name,
		Command: []string{os.Args[0]},
		Env: map[string]string{
			serveEnv: "1",
			// The race detector's exit pause would slow every restart.
			"GORACE": strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0"),
		},
	}
}

// lines is a slog handler that passes on the lines a stdio server writes
// to its standard error.
type lines struct{ ch chan string }

func newLines() *lines { return &lines{ch: make(chan string, 100)} }

func (h *lines) Enabled(context.Context, slog.Level) bool { return true }
func (h *lines) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *lines) WithGroup(string) slog.Handler            { return h }
func (h *lines) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "line" {
			select {
			case h.ch <- a.Value.String():
			default:
			}
		}
		return true
	})
	return nil
}

// wait waits for the server to write line.
func (h *lines) wait(t *testing.T, line string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case got := <-h.ch:
			if got == line {
				return
			}
		case <-deadline:
			t.Fatalf("the server did not say %q", line)
		}
	}
}

// startTest starts cfg and closes it at the end of the test.
func startTest(t testing.TB, cfg ServerConfig, log *slog.Logger) *Server {
	t.Helper()
	s, err := Start(context.Background(), cfg, nil, log)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// tool returns s's tool called name.
func tool(t testing.TB, s *Server, name string) tools.Tool {
	t.Helper()
	for _, tl := range s.Tools() {
		if tl.Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %q", name)
	return tools.Tool{}
}
