package builtin

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/tools"
	"github.com/aslrun/aslrun/tools/files"
)

// toolMeta is what an agent of the file tells a model when a loop agent
// offers it as a tool: its Description and InputSchema, both optional.
type toolMeta struct {
	description string
	schema      json.RawMessage
}

// describedTool is an agent that describes itself as a tool (the request
// and file tools do), its input schema as JSON text or as a decoded
// object.
type describedTool interface {
	Description() string
}

type (
	rawSchema interface{ InputSchema() json.RawMessage }
	mapSchema interface{ InputSchema() map[string]any }
)

// toolMeta reads the optional Description and InputSchema of an agent.
func (p *fieldParser) toolMeta() toolMeta {
	m := toolMeta{description: p.str("Description", false)}
	v, ok := p.obj["InputSchema"]
	if !ok || p.err != nil {
		return m
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		p.fail("InputSchema", "InputSchema must be a JSON Schema object, not %s", jsonvalue.TypeName(v))
		return m
	}
	if t, has := obj["type"]; has && t != "object" {
		p.fail("InputSchema/type", "a tool's InputSchema describes an object of arguments: its type must be \"object\", not %s", describe(t))
		return m
	}
	data, err := jsonvalue.Marshal(v)
	if err == nil {
		_, err = tools.CompileSchema(data)
	}
	if err != nil {
		p.fail("InputSchema", "InputSchema: %v", err)
		return m
	}
	m.schema = data
	return m
}

// toolOf describes the agent name of the file (or, with no entry in the
// file, an agent already registered from Go in reg) as a loop agent
// offers it: its Description and InputSchema from the file, else the
// agent's own (Description and InputSchema methods).
func (f *AgentsFile) toolOf(name string, built map[string]agents.Agent, reg *agents.Registry) (description string, schema json.RawMessage) {
	meta := f.agents[name].meta
	description, schema = meta.description, meta.schema
	a, ok := built[name]
	if !ok {
		a, _ = reg.Lookup(name)
	}
	if d, ok := a.(describedTool); ok && description == "" {
		description = d.Description()
	}
	if schema == nil {
		switch d := a.(type) {
		case rawSchema:
			schema = d.InputSchema()
		case mapSchema:
			schema, _ = jsonvalue.Marshal(d.InputSchema())
		}
	}
	if description == "" {
		description = "the agent " + name
	}
	return description, schema
}

// requestFields are the fields of an http agent without a URL: a request
// tool.
const requestFields = "Type, Comment, Description, InputSchema, Methods, URLPrefixes, Headers, TimeoutSeconds, MaxBytes"

// request reads an http agent without a URL: a request tool the model
// directs (HTTPRequestConfig).
func (p *fieldParser) request() *HTTPRequestConfig {
	p.unknown("http request tool", requestFields)
	c := &HTTPRequestConfig{
		Methods:     p.strList("Methods"),
		URLPrefixes: p.strList("URLPrefixes"),
		Headers:     p.strMap("Headers"),
		Timeout:     p.seconds("TimeoutSeconds"),
		MaxBytes:    int64(p.integer("MaxBytes", 1, maxBody)),
	}
	for i, m := range c.Methods {
		if !slices.Contains(requestMethods, m) {
			p.fail(fmt.Sprintf("Methods/%d", i), "%q is not a method a request tool may use (%v)", m, requestMethods)
		}
	}
	for i, u := range c.URLPrefixes {
		if _, err := checkURL(u); err != nil {
			p.fail(fmt.Sprintf("URLPrefixes/%d", i), "%v", err)
		}
	}
	if len(c.Headers) > 0 && len(c.URLPrefixes) == 0 {
		p.fail("Headers", "Headers of a request tool need URLPrefixes, so that they go only to the URLs you name")
	}
	p.headers(c.Headers)
	return c
}

// headers checks an agent's Headers: valid, and a secret only as a
// reference.
func (p *fieldParser) headers(h map[string]string) {
	for _, name := range slices.Sorted(maps.Keys(h)) {
		rel := "Headers/" + jsonvalue.EscapePointer(name)
		if err := checkHeader(name, h[name]); err != nil {
			p.fail(rel, "%v", err)
		} else if secretName(name) && !refersToSecret(h[name]) {
			p.failSecret(rel, `header %s carries a secret, and the agents file is stored with every execution: write the secret as a reference read from the environment when the agent is called, like "Bearer ${TOKEN}" or "${VAR}"%s`, name, besideHint(h[name]))
		}
	}
}

// fileFields are the fields of a file tool.
const fileFields = "Type, Comment, Description, InputSchema, Root, Operations, MaxFileSize"

// fileToolConfig is a file tool of the file: Root as written (relative
// to the file's directory).
type fileToolConfig struct {
	root        string
	operations  []string
	maxFileSize int64
}

// file reads a file tool (files.Config).
func (p *fieldParser) file() *fileToolConfig {
	p.unknown("file", fileFields)
	c := &fileToolConfig{root: p.str("Root", true), operations: p.strList("Operations")}
	for i, op := range c.operations {
		if !slices.Contains(fileOperations, op) {
			p.fail(fmt.Sprintf("Operations/%d", i), "%q is not an operation of the file tool (%v)", op, fileOperations)
		}
	}
	if v, ok := p.obj["MaxFileSize"]; ok && p.err == nil {
		n, valid := int64(0), false
		switch x := v.(type) {
		case json.Number:
			n, valid = jsonvalue.Int64(x)
			valid = valid && n > 0
		case string:
			n, valid = states.ParseSize(x)
		}
		if !valid {
			p.fail("MaxFileSize", `MaxFileSize must be a size in bytes: a positive whole number, or a string like "256K" or "10MB", not %s`, describe(v))
		}
		c.maxFileSize = n
	}
	return c
}

// fileOperations are the operations a file tool may be granted.
var fileOperations = []string{"read", "write", "list", "stat"}

// build makes the file tool, its Root resolved against base.
func (c *fileToolConfig) build(base string) (agents.Agent, error) {
	return files.New(files.Config{Root: resolveDir(base, c.root), Operations: c.operations, MaxFileSize: c.maxFileSize})
}
