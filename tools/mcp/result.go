package mcp

import (
	"encoding/base64"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonvalue"
)

// result turns the result of server's tool into a JSON value:
//
//   - IsError: an Agent.ToolError with the text of the text contents;
//   - structured content: that value;
//   - text contents only (or none): their text, joined by newlines;
//   - anything else: a list with each text content as a string and each
//     other content as an object with its "type" ("image", "audio",
//     "resource_link", "resource") and fields ("mimeType", "data" in
//     base64, "uri", "name", "text", "blob" in base64, …).
func result(server, tool string, res *sdk.CallToolResult) (any, error) {
	if res == nil {
		return nil, asl.Errorf(asl.ErrAgentToolError, "mcp server %s: tool %s: no result", server, tool)
	}
	if res.IsError {
		msg := texts(res.Content)
		if msg == "" {
			msg = "the tool failed without saying why"
		}
		return nil, asl.Errorf(asl.ErrAgentToolError, "mcp server %s: tool %s: %s", server, tool, msg)
	}
	if res.StructuredContent != nil {
		v, err := jsonvalue.Normalize(res.StructuredContent)
		if err != nil {
			return nil, &asl.Error{Name: asl.ErrAgentToolError, Cause: "mcp server " + server + ": tool " + tool + ": structured content: " + err.Error(), Err: err}
		}
		return v, nil
	}
	allText := true
	for _, c := range res.Content {
		if _, ok := c.(*sdk.TextContent); !ok {
			allText = false
			break
		}
	}
	if allText {
		return texts(res.Content), nil
	}
	out := make([]any, 0, len(res.Content))
	for _, c := range res.Content {
		out = append(out, content(c))
	}
	return out, nil
}

// texts joins the text of the text contents with newlines.
func texts(cs []sdk.Content) string {
	var b strings.Builder
	n := 0
	for _, c := range cs {
		if t, ok := c.(*sdk.TextContent); ok {
			if n > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(t.Text)
			n++
		}
	}
	return b.String()
}

// content is one content of a mixed result as a JSON value.
func content(c sdk.Content) any {
	switch c := c.(type) {
	case *sdk.TextContent:
		return c.Text
	case *sdk.ImageContent:
		return binary("image", c.MIMEType, c.Data)
	case *sdk.AudioContent:
		return binary("audio", c.MIMEType, c.Data)
	case *sdk.ResourceLink:
		m := map[string]any{"type": "resource_link", "uri": c.URI, "name": c.Name}
		set(m, "title", c.Title)
		set(m, "description", c.Description)
		set(m, "mimeType", c.MIMEType)
		return m
	case *sdk.EmbeddedResource:
		m := map[string]any{"type": "resource"}
		if r := c.Resource; r != nil {
			m["uri"] = r.URI
			set(m, "mimeType", r.MIMEType)
			if r.Blob != nil {
				m["blob"] = base64.StdEncoding.EncodeToString(r.Blob)
			} else {
				m["text"] = r.Text
			}
		}
		return m
	default:
		return map[string]any{"type": "unknown"}
	}
}

func binary(kind, mimeType string, data []byte) map[string]any {
	return map[string]any{"type": kind, "mimeType": mimeType, "data": base64.StdEncoding.EncodeToString(data)}
}

func set(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}
