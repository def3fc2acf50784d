// Package mcp makes the tools of Model Context Protocol servers callable as
// aslrun tools, on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// A server is either a local program spoken to over its standard input and
// output (ServerConfig.Command) or a streamable HTTP endpoint
// (ServerConfig.URL). Start connects, initializes the session and lists the
// server's tools; each becomes a tools.Tool named "server.tool" whose input schema
// is the server's own. A server that announces a changed tool list is
// listed again and OnChange hears of it. A stdio server that exits, or an
// HTTP session that ends, fails the calls in flight and every call until it
// is back with Agent.ToolError naming the server, and is restarted in the
// background with a backoff of 0.5 s doubling up to 30 s.
//
// A call's result becomes a JSON value: the structured content when the
// server gives one, else the text of its text contents, else a list that
// keeps images, audio and resources as objects. A result the server marks
// as an error is an Agent.ToolError carrying its text.
//
// A stdio server runs as aslrun's own user, with aslrun's environment plus
// ServerConfig.Env: it sees every file and host aslrun sees. The FileSystem
// checks aslrun applies to a tool's path arguments (ServerConfig.PathArgs)
// constrain what a workflow asks for, not what the program can do.
package mcp
