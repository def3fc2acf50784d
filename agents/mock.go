package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonvalue"
)

// Mocks is a parsed mock file: for each agent, its scripted responses by
// invocation number (DESIGN.md §7, the shape of AWS Step Functions Local
// mock configurations). Beyond that shape, a response may say how long the
// agent takes ("DelaySeconds") and how often it sends a heartbeat meanwhile
// ("HeartbeatSeconds"), so that timeouts and heartbeats can be scripted too.
// It is immutable and safe for concurrent use.
type Mocks struct {
	agents map[string]*Mock
}

// Mock is one scripted agent. It answers by req.Invocation, so it holds no
// state of its own and can serve any number of executions.
type Mock struct {
	name      string
	responses []mockResponse
}

type mockResponse struct {
	from, to int // inclusive invocation range
	result   any
	err      *asl.Error
	// delay is how long the agent takes to answer; heartbeat how often it
	// sends a heartbeat meanwhile (0: never).
	delay, heartbeat time.Duration
	// usage is reported before answering; tools are used or called, in
	// order, first.
	usage *Usage
	tools []mockTool
}

// mockTool is one entry of a response's Tools: a tool name only used
// (Tools.Use), or, in the object form, a call run through Tools.Run.
type mockTool struct {
	name string
	// run is set by the object form: the tool is called with input, and
	// answers output (or err) after delay.
	run    bool
	input  map[string]any
	output any
	err    *asl.Error
	delay  time.Duration
}

// parseMockUsage reads {"InputTokens", "OutputTokens", "Tokens", "Cost"}.
func parseMockUsage(ptr string, v any) (*Usage, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, mockErrorf(ptr, "Usage must be an object with InputTokens, OutputTokens, Tokens and Cost, not %s", jsonvalue.TypeName(v))
	}
	u := &Usage{}
	for k, fv := range obj {
		n, isNum := fv.(json.Number)
		if !isNum {
			return nil, mockErrorf(ptr+"/"+k, "%s must be a number, not %s", k, jsonvalue.TypeName(fv))
		}
		f, valid := jsonvalue.Float64(n)
		i, isInt := jsonvalue.Int64(n)
		switch k {
		case "Cost":
			if !valid || f < 0 {
				return nil, mockErrorf(ptr+"/"+k, "Cost must be a number ≥ 0")
			}
			u.Cost = f
		case "InputTokens", "OutputTokens", "Tokens":
			if !isInt || i < 0 {
				return nil, mockErrorf(ptr+"/"+k, "%s must be an integer ≥ 0", k)
			}
			switch k {
			case "InputTokens":
				u.InputTokens = i
			case "OutputTokens":
				u.OutputTokens = i
			default:
				u.Tokens = i
			}
		default:
			return nil, mockErrorf(ptr+"/"+k, "unknown field %q (Usage has InputTokens, OutputTokens, Tokens and Cost)", k)
		}
	}
	return u, nil
}

// ParseMocks strictly decodes and validates a mock file.
func ParseMocks(data []byte) (*Mocks, error) {
	v, err := jsonvalue.Decode(data)
	if err != nil {
		return nil, err
	}
	return MocksFromValue(v)
}

// MockError reports a problem in a mock file, at a JSON Pointer.
type MockError struct {
	Pointer string
	Msg     string
}

func (e *MockError) Error() string { return fmt.Sprintf("mock %s: %s", e.Pointer, e.Msg) }

func mockErrorf(ptr, format string, args ...any) *MockError {
	return &MockError{Pointer: ptr, Msg: fmt.Sprintf(format, args...)}
}

// MocksFromValue validates an already decoded mock object:
// {"Agent": {"0": {"Return": v}, "1-2": {"Throw": {"Error": e, "Cause": c}}}}.
func MocksFromValue(v any) (*Mocks, error) {
	top, ok := v.(map[string]any)
	if !ok {
		return nil, mockErrorf("/", "mocks must be an object mapping agent names to responses, not %s", jsonvalue.TypeName(v))
	}
	ms := &Mocks{agents: make(map[string]*Mock, len(top))}
	for _, name := range sortedKeys(top) {
		ptr := "/" + name
		resp, ok := top[name].(map[string]any)
		if !ok {
			return nil, mockErrorf(ptr, "responses of agent %q must be an object keyed by invocation number, not %s", name, jsonvalue.TypeName(top[name]))
		}
		m := &Mock{name: name}
		for _, key := range sortedKeys(resp) {
			r, err := parseMockResponse(ptr+"/"+key, key, resp[key])
			if err != nil {
				return nil, err
			}
			m.responses = append(m.responses, r)
		}
		sort.Slice(m.responses, func(i, j int) bool { return m.responses[i].from < m.responses[j].from })
		for i := 1; i < len(m.responses); i++ {
			if m.responses[i].from <= m.responses[i-1].to {
				return nil, mockErrorf(ptr, "agent %q: invocation %d has two responses", name, m.responses[i].from)
			}
		}
		ms.agents[name] = m
	}
	return ms, nil
}

func parseMockResponse(ptr, key string, v any) (mockResponse, error) {
	var r mockResponse
	from, to, err := parseRange(key)
	if err != nil {
		return r, mockErrorf(ptr, "%v", err)
	}
	r.from, r.to = from, to
	obj, ok := v.(map[string]any)
	if !ok {
		return r, mockErrorf(ptr, "a response must be an object with Return or Throw, not %s", jsonvalue.TypeName(v))
	}
	for k := range obj {
		switch k {
		case "Return", "Throw", "DelaySeconds", "HeartbeatSeconds", "Usage", "Tools":
		case "Comment":
			if _, isStr := obj[k].(string); !isStr {
				return r, mockErrorf(ptr+"/Comment", "Comment must be a string, not %s", jsonvalue.TypeName(obj[k]))
			}
		default:
			return r, mockErrorf(ptr+"/"+k, "unknown field %q (a response has Return or Throw, and optionally DelaySeconds, HeartbeatSeconds, Usage, Tools and Comment)", k)
		}
	}
	ret, hasReturn := obj["Return"]
	throw, hasThrow := obj["Throw"]
	if hasReturn == hasThrow {
		return r, mockErrorf(ptr, "a response must have exactly one of Return or Throw")
	}
	if r.delay, err = mockSeconds(obj, "DelaySeconds", ptr); err != nil {
		return r, err
	}
	if r.heartbeat, err = mockSeconds(obj, "HeartbeatSeconds", ptr); err != nil {
		return r, err
	}
	if _, ok := obj["HeartbeatSeconds"]; ok && r.heartbeat == 0 {
		return r, mockErrorf(ptr+"/HeartbeatSeconds", "HeartbeatSeconds must be greater than 0")
	}
	if u, ok := obj["Usage"]; ok {
		if r.usage, err = parseMockUsage(ptr+"/Usage", u); err != nil {
			return r, err
		}
	}
	if tv, ok := obj["Tools"]; ok {
		list, isArr := tv.([]any)
		if !isArr {
			return r, mockErrorf(ptr+"/Tools", "Tools must be an array of tool names or tool calls, not %s", jsonvalue.TypeName(tv))
		}
		for i, n := range list {
			t, err := parseMockTool(fmt.Sprintf("%s/Tools/%d", ptr, i), n)
			if err != nil {
				return r, err
			}
			r.tools = append(r.tools, t)
		}
	}
	if hasReturn {
		r.result = ret
		return r, nil
	}
	r.err, err = parseMockThrow(ptr+"/Throw", throw)
	return r, err
}

// parseMockThrow reads {"Error", "Cause"}; Error is required.
func parseMockThrow(ptr string, v any) (*asl.Error, error) {
	t, ok := v.(map[string]any)
	if !ok {
		return nil, mockErrorf(ptr, "Throw must be an object with Error and Cause, not %s", jsonvalue.TypeName(v))
	}
	e := &asl.Error{}
	for _, k := range sortedKeys(t) {
		s, isStr := t[k].(string)
		switch {
		case k != "Error" && k != "Cause":
			return nil, mockErrorf(ptr+"/"+k, "unknown field %q (Throw has Error and Cause)", k)
		case !isStr:
			return nil, mockErrorf(ptr+"/"+k, "%s must be a string, not %s", k, jsonvalue.TypeName(t[k]))
		case k == "Error":
			e.Name = asl.ErrorName(s)
		default:
			e.Cause = s
		}
	}
	if e.Name == "" {
		return nil, mockErrorf(ptr, "missing Error")
	}
	return e, nil
}

// parseMockTool reads one entry of a response's Tools: a tool name, or a
// tool call {"Name", "Input", "Output" or "Throw", "DelaySeconds",
// "Comment"}.
func parseMockTool(ptr string, v any) (mockTool, error) {
	if name, isStr := v.(string); isStr {
		if name == "" {
			return mockTool{}, mockErrorf(ptr, "a tool name must not be empty")
		}
		return mockTool{name: name}, nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return mockTool{}, mockErrorf(ptr, "a tool must be a tool name or a tool call object with Name, not %s", jsonvalue.TypeName(v))
	}
	t := mockTool{run: true}
	for _, k := range sortedKeys(obj) {
		fv := obj[k]
		switch k {
		case "Name":
			name, isStr := fv.(string)
			if !isStr || name == "" {
				return t, mockErrorf(ptr+"/Name", "Name must be a non-empty string, not %s", jsonName(fv))
			}
			t.name = name
		case "Input":
			in, isObj := fv.(map[string]any)
			if !isObj {
				return t, mockErrorf(ptr+"/Input", "Input must be an object (the tool's arguments), not %s", jsonvalue.TypeName(fv))
			}
			t.input = in
		case "Output":
			t.output = fv
		case "Throw":
			e, err := parseMockThrow(ptr+"/Throw", fv)
			if err != nil {
				return t, err
			}
			t.err = e
		case "DelaySeconds":
			d, err := mockSeconds(obj, k, ptr)
			if err != nil {
				return t, err
			}
			t.delay = d
		case "Comment":
			if _, isStr := fv.(string); !isStr {
				return t, mockErrorf(ptr+"/Comment", "Comment must be a string, not %s", jsonvalue.TypeName(fv))
			}
		default:
			return t, mockErrorf(ptr+"/"+k, "unknown field %q (a tool call has Name, and optionally Input, Output or Throw, DelaySeconds and Comment)", k)
		}
	}
	if t.name == "" {
		return t, mockErrorf(ptr, "a tool call needs a Name")
	}
	if _, hasOutput := obj["Output"]; hasOutput && t.err != nil {
		return t, mockErrorf(ptr, "a tool call has Output or Throw, not both")
	}
	return t, nil
}

// jsonName names v's JSON type, or quotes it when it is an empty string.
func jsonName(v any) string {
	if s, isStr := v.(string); isStr && s == "" {
		return `""`
	}
	return jsonvalue.TypeName(v)
}

// mockSeconds reads an optional non-negative number of seconds.
func mockSeconds(obj map[string]any, key, ptr string) (time.Duration, error) {
	v, ok := obj[key]
	if !ok {
		return 0, nil
	}
	n, isNum := v.(json.Number)
	f, valid := jsonvalue.Float64(n)
	if !isNum || !valid || f < 0 || f > 86400 {
		return 0, mockErrorf(ptr+"/"+key, "%s must be a number of seconds between 0 and 86400, not %s", key, jsonvalue.TypeName(v))
	}
	return time.Duration(f * float64(time.Second)), nil
}

// parseRange parses "3" or "1-2".
func parseRange(key string) (from, to int, err error) {
	a, b, isRange := strings.Cut(key, "-")
	from, err = strconv.Atoi(a)
	if err != nil || from < 0 || a != strconv.Itoa(from) {
		return 0, 0, fmt.Errorf("invocation key %q must be a number or a range like \"1-2\"", key)
	}
	if !isRange {
		return from, from, nil
	}
	to, err = strconv.Atoi(b)
	if err != nil || to < from || b != strconv.Itoa(to) {
		return 0, 0, fmt.Errorf("invocation key %q must be a number or a range like \"1-2\" with a start not after its end", key)
	}
	return from, to, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Names returns the mocked agent names in sorted order.
func (ms *Mocks) Names() []string {
	names := make([]string, 0, len(ms.agents))
	for n := range ms.agents {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Agent returns the mock scripted for name.
func (ms *Mocks) Agent(name string) (*Mock, bool) {
	m, ok := ms.agents[name]
	return m, ok
}

// Register adds every mocked agent to r.
func (ms *Mocks) Register(r *Registry) error {
	for _, n := range ms.Names() {
		if err := r.Register(n, ms.agents[n]); err != nil {
			return err
		}
	}
	return nil
}

// Invoke returns the response scripted for req.Invocation. An invocation
// without a response fails with States.TaskFailed.
func (m *Mock) Invoke(ctx context.Context, req *Request) (any, error) {
	i := sort.Search(len(m.responses), func(i int) bool { return m.responses[i].to >= req.Invocation })
	if i == len(m.responses) || m.responses[i].from > req.Invocation {
		return nil, asl.Errorf(asl.ErrTaskFailed, "mocked agent %q has no response for invocation %d", m.name, req.Invocation)
	}
	r := m.responses[i]
	for _, tool := range r.tools {
		if tool.run {
			if _, err := req.Tools.Run(ctx, tool.name, tool.input, r.call(req, tool)); err != nil {
				return nil, err
			}
			continue
		}
		release, err := req.Tools.Use(ctx, tool.name)
		if err != nil {
			return nil, err
		}
		release()
	}
	if err := r.wait(ctx, req); err != nil {
		return nil, err
	}
	if r.usage != nil {
		req.ReportUsage(*r.usage)
	}
	if r.err != nil {
		return nil, &asl.Error{Name: r.err.Name, Cause: r.err.Cause}
	}
	return r.result, nil
}

// HonoursContext reports true: a mock's delays and tool calls end with
// their context.
func (m *Mock) HonoursContext() bool { return true }

var _ Agent = (*Mock)(nil)

// call is the scripted tool call t: it takes t's delay (sending the
// response's heartbeats meanwhile), then answers t's output or error.
func (r *mockResponse) call(req *Request, t mockTool) ToolCall {
	return func(ctx context.Context, _ map[string]any) (any, error) {
		if err := r.sleep(ctx, req, t.delay); err != nil {
			return nil, err
		}
		if t.err != nil {
			return nil, &asl.Error{Name: t.err.Name, Cause: t.err.Cause}
		}
		return t.output, nil
	}
}

// wait spends the response's delay, sending heartbeats as scripted, and
// returns early with the context's error when the call is cancelled.
func (r *mockResponse) wait(ctx context.Context, req *Request) error {
	return r.sleep(ctx, req, r.delay)
}

// sleep waits for delay, sending the response's heartbeats meanwhile, and
// returns early with the context's error when ctx ends.
func (r *mockResponse) sleep(ctx context.Context, req *Request, delay time.Duration) error {
	if delay <= 0 {
		return nil
	}
	done := time.NewTimer(delay)
	defer done.Stop()
	var beat <-chan time.Time
	if r.heartbeat > 0 {
		t := time.NewTicker(r.heartbeat)
		defer t.Stop()
		beat = t.C
	}
	for {
		select {
		case <-done.C:
			return nil
		case <-beat:
			req.Heartbeat()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
