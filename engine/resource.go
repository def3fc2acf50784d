package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// resolveAgent returns the name of the agent a Task calls and the input it
// receives: the Task's Agent with the state's parameters, or for a
// Resource the agent the registry resolves it to, with lambda:invoke's
// Payload as the input. An unresolved resource is States.TaskFailed,
// naming the ARN (a start-time check refuses the resources known before
// the run; lambda:invoke with a FunctionName computed at run time is only
// known here).
//
// version is the version a lambda:invoke runs ("$LATEST", or the numeric
// qualifier of its FunctionName), for its response.
func (h *stateRun) resolveAgent(s *states.Task, params any) (name string, input any, version string, err error) {
	r := s.Resource
	if r == nil {
		return s.Agent, params, "", nil
	}
	function, fallback, input := r.Function(), r.AgentName(), params
	if r.Kind == states.LambdaInvoke {
		obj, ok := params.(map[string]any)
		if !ok {
			return "", nil, "", asl.Errorf(asl.ErrTaskFailed, "%s: the parameters must be an object with FunctionName and Payload, not %s", r.ARN, jsonvalue.TypeName(params))
		}
		fn, ok := obj["FunctionName"].(string)
		if !ok {
			return "", nil, "", asl.Errorf(asl.ErrTaskFailed, "%s: the parameter FunctionName must be a string, not %s", r.ARN, jsonvalue.TypeName(obj["FunctionName"]))
		}
		name, q, ok := states.FunctionName(fn)
		if !ok {
			return "", nil, "", asl.Errorf(asl.ErrTaskFailed, "%s: FunctionName %q is not a function name, a partial ARN or a function ARN", r.ARN, fn)
		}
		function, fallback = fn, name
		version = "$LATEST"
		if isDigits(q) {
			// A published version runs as itself; an alias's version
			// is not known here.
			version = q
		}
		// Lambda receives the Payload; with none, an empty object.
		input = map[string]any{}
		if p, ok := obj["Payload"]; ok {
			input = p
		}
	}
	name, ok := h.r.agents.ResolveResource(r.ARN, function, fallback)
	if !ok {
		switch {
		case name != "":
			return name, nil, "", asl.Errorf(asl.ErrTaskFailed, "resource %s is mapped to agent %q, which is not registered", r.ARN, name)
		case function != "" && function != r.ARN:
			return "", nil, "", asl.Errorf(asl.ErrTaskFailed, "resource %s (FunctionName %q) resolves to no agent: register agent %q or map the function in the resources", r.ARN, function, fallback)
		default:
			return "", nil, "", asl.Errorf(asl.ErrTaskFailed, "resource %s resolves to no agent", r.ARN)
		}
	}
	return name, input, version, nil
}

// credentials evaluates a Task's Credentials for one call: against the
// effective input (after InputPath) in JSONPath, with $states.input in
// JSONata. nil when the Task has none.
func (h *stateRun) credentials(ctx context.Context, s *states.Task) (any, error) {
	switch {
	case s.Credentials != nil:
		input, err := h.inputPath(h.raw)
		if err != nil {
			return nil, err
		}
		v, _, err := h.template(s.Credentials, input, unknownSize)
		return v, err
	case s.CredentialsJSONata != nil:
		return h.evalJSONata(ctx, s.CredentialsJSONata, h.jsonataScope(h.raw), "Credentials")
	}
	return nil, nil
}

// lambdaResponse wraps an agent's result in the response
// arn:aws:states:::lambda:invoke gives a state: AWS's Lambda Invoke
// response with the result as Payload. The request id is derived from the
// call's idempotency key, so that a call repeated after a crash gives the
// same response.
func lambdaResponse(result any, version, key string) any {
	sum := sha256.Sum256([]byte(key))
	var b [36]byte
	hex.Encode(b[0:8], sum[0:4])
	hex.Encode(b[9:13], sum[4:6])
	hex.Encode(b[14:18], sum[6:8])
	hex.Encode(b[19:23], sum[8:10])
	hex.Encode(b[24:36], sum[10:16])
	b[8], b[13], b[18], b[23] = '-', '-', '-', '-'
	id := string(b[:])
	status := jsonvalue.IntNumber(200)
	return map[string]any{
		"ExecutedVersion": version,
		"Payload":         result,
		"SdkHttpMetadata": map[string]any{
			"AllHttpHeaders": map[string]any{
				"Content-Type":           []any{"application/json"},
				"X-Amz-Executed-Version": []any{version},
				"x-amzn-RequestId":       []any{id},
			},
			"HttpHeaders": map[string]any{
				"Content-Type":           "application/json",
				"X-Amz-Executed-Version": version,
				"x-amzn-RequestId":       id,
			},
			"HttpStatusCode": status,
		},
		"SdkResponseMetadata": map[string]any{"RequestId": id},
		"StatusCode":          status,
	}
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// lambdaError gives an agent's own error, raised by a Task whose Resource
// is a Lambda function or lambda:invoke, the cause Lambda gives a
// function's error in Step Functions: a JSON object text with errorMessage
// and errorType, so that definitions written for AWS (a Catch reading
// States.StringToJson($.Cause).errorMessage) work unchanged. The error
// name is kept. States.* errors (timeouts, States.TaskFailed for a plain
// Go error, budget and permission errors) keep their text, as AWS gives
// its own errors, and so does a cause that is already such an object.
func lambdaError(r *states.Resource, ae *asl.Error) *asl.Error {
	if r == nil || (r.Kind != states.LambdaFunction && r.Kind != states.LambdaInvoke) ||
		strings.HasPrefix(string(ae.Name), "States.") || isLambdaCause(ae.Cause) {
		return ae
	}
	// encoding/json escapes as AWS's Lambda runtimes do not ("<", ">",
	// "&"); an Encoder without HTML escaping keeps the text as written.
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		Message string `json:"errorMessage"`
		Type    string `json:"errorType"`
	}{ae.Cause, string(ae.Name)}); err != nil {
		return ae
	}
	out := *ae
	out.Cause = strings.TrimSuffix(b.String(), "\n")
	return &out
}

// isLambdaCause reports whether cause is already a Lambda error object
// (JSON with a string errorMessage).
func isLambdaCause(cause string) bool {
	if !strings.HasPrefix(cause, "{") {
		return false
	}
	var v struct {
		Message *string `json:"errorMessage"`
	}
	return json.Unmarshal([]byte(cause), &v) == nil && v.Message != nil
}
