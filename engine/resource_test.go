package engine_test

import (
	"context"
	"sync"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// recorder is an agent that keeps the requests it receives and answers
// with a fixed result.
type recorder struct {
	mu     sync.Mutex
	reqs   []agents.Request
	result any
}

func (r *recorder) Invoke(_ context.Context, req *agents.Request) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, *req)
	return r.result, nil
}

func TestResourceRequests(t *testing.T) {
	tests := []struct {
		name, def, input string
		agent            string
		wantInput        string
		wantResource     string
		wantCredentials  string // "" for none
	}{
		{
			name:         "function ARN gets the effective input",
			def:          `{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:score", "InputPath": "$.doc", "Parameters": {"d.$": "$"}, "End": true}}}`,
			input:        `{"doc": {"n": 1}}`,
			agent:        "score",
			wantInput:    `{"d": {"n": 1}}`,
			wantResource: "arn:aws:lambda:us-east-1:123456789012:function:score",
		},
		{
			name:            "lambda:invoke gets the Payload and the credentials",
			def:             `{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "score:live", "Payload.$": "$.doc", "InvocationType": "RequestResponse"}, "Credentials": {"RoleArn.$": "States.Format('arn:aws:iam::123456789012:role/{}', $.role)"}, "End": true}}}`,
			input:           `{"doc": [1, 2], "role": "Scorer"}`,
			agent:           "score",
			wantInput:       `[1, 2]`,
			wantResource:    "arn:aws:states:::lambda:invoke",
			wantCredentials: `{"RoleArn": "arn:aws:iam::123456789012:role/Scorer"}`,
		},
		{
			name:         "lambda:invoke without a Payload sends an empty object",
			def:          `{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "score"}, "End": true}}}`,
			input:        `{"x": 1}`,
			agent:        "score",
			wantInput:    `{}`,
			wantResource: "arn:aws:states:::lambda:invoke",
		},
		{
			name:            "Credentials evaluate against the input after InputPath",
			def:             `{"StartAt": "T", "States": {"T": {"Type": "Task", "Agent": "score", "InputPath": "$.inner", "Credentials": {"RoleArn.$": "$.role"}, "End": true}}}`,
			input:           `{"inner": {"role": "arn:aws:iam::123456789012:role/R"}}`,
			agent:           "score",
			wantInput:       `{"role": "arn:aws:iam::123456789012:role/R"}`,
			wantCredentials: `{"RoleArn": "arn:aws:iam::123456789012:role/R"}`,
		},
		{
			name:            "JSONata Arguments and Credentials",
			def:             `{"QueryLanguage": "JSONata", "StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Arguments": {"FunctionName": "{% $states.input.fn %}", "Payload": "{% $states.input.n + 1 %}"}, "Credentials": {"RoleArn": "{% $states.input.role %}"}, "End": true}}}`,
			input:           `{"fn": "arn:aws:lambda:us-east-1:123456789012:function:score", "n": 1, "role": "r"}`,
			agent:           "score",
			wantInput:       `2`,
			wantResource:    "arn:aws:states:::lambda:invoke",
			wantCredentials: `{"RoleArn": "r"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &recorder{result: mustJSON(t, `{"ok": true}`)}
			res := execute(t, tt.def, tt.input, map[string]agents.Agent{tt.agent: a})
			if res.Status != engine.StatusSucceeded {
				t.Fatalf("status %s (%s: %s)", res.Status, res.Error, res.Cause)
			}
			if len(a.reqs) != 1 {
				t.Fatalf("%d calls, want 1", len(a.reqs))
			}
			req := a.reqs[0]
			if !jsonvalue.Equal(req.Input, mustJSON(t, tt.wantInput)) {
				got, _ := jsonvalue.Marshal(req.Input)
				t.Errorf("Input = %s, want %s", got, tt.wantInput)
			}
			if req.Agent != tt.agent || req.Resource != tt.wantResource {
				t.Errorf("Agent, Resource = %q, %q, want %q, %q", req.Agent, req.Resource, tt.agent, tt.wantResource)
			}
			switch {
			case tt.wantCredentials == "" && req.Credentials != nil:
				t.Errorf("Credentials = %v, want none", req.Credentials)
			case tt.wantCredentials != "" && !jsonvalue.Equal(req.Credentials, mustJSON(t, tt.wantCredentials)):
				t.Errorf("Credentials = %v, want %s", req.Credentials, tt.wantCredentials)
			}
		})
	}
}

func TestLambdaInvokeResponse(t *testing.T) {
	def := `{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "arn:aws:lambda:us-east-1:123456789012:function:score:12", "Payload": {}}, "End": true}}}`
	a := &recorder{result: mustJSON(t, `{"score": 7}`)}
	res := execute(t, def, `{}`, map[string]agents.Agent{"score": a})
	out, ok := res.Output.(map[string]any)
	if res.Status != engine.StatusSucceeded || !ok {
		t.Fatalf("status %s, output %v", res.Status, res.Output)
	}
	meta, _ := out["SdkResponseMetadata"].(map[string]any)
	id, _ := meta["RequestId"].(string)
	if len(id) != 36 {
		t.Errorf("RequestId = %q, want a UUID-shaped id", id)
	}
	want := mustJSON(t, `{
	  "ExecutedVersion": "12",
	  "Payload": {"score": 7},
	  "SdkHttpMetadata": {
	    "AllHttpHeaders": {"Content-Type": ["application/json"], "X-Amz-Executed-Version": ["12"], "x-amzn-RequestId": ["`+id+`"]},
	    "HttpHeaders": {"Content-Type": "application/json", "X-Amz-Executed-Version": "12", "x-amzn-RequestId": "`+id+`"},
	    "HttpStatusCode": 200
	  },
	  "SdkResponseMetadata": {"RequestId": "`+id+`"},
	  "StatusCode": 200
	}`)
	if !jsonvalue.Equal(res.Output, want) {
		got, _ := jsonvalue.Marshal(res.Output)
		t.Errorf("output = %s", got)
	}
	// Another execution's call has another request id.
	again := execute(t, def, `{}`, map[string]agents.Agent{"score": a})
	if id2 := again.Output.(map[string]any)["SdkResponseMetadata"].(map[string]any)["RequestId"]; id2 == id {
		t.Errorf("two executions share request id %q", id)
	}
}

func TestResourceUnresolvedAtRunTime(t *testing.T) {
	reg := agents.NewRegistry()
	if err := reg.RegisterResource("arn:aws:states:::sqs:sendMessage", "Queue"); err != nil {
		t.Fatal(err)
	}
	x := engine.New(engine.Config{Agents: reg})
	for _, tt := range []struct{ def, cause string }{
		{`{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage", "End": true}}}`, `resource arn:aws:states:::sqs:sendMessage is mapped to agent "Queue", which is not registered`},
		{`{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish", "End": true}}}`, `resource arn:aws:states:::sns:publish resolves to no agent`},
		{`{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName.$": "$.fn"}, "End": true}}}`, `(FunctionName "f") resolves to no agent`},
		{`{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName.$": "$.n"}, "End": true}}}`, `FunctionName must be a string, not number`},
		{`{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName.$": "$.bad"}, "End": true}}}`, `FunctionName "a b" is not a function name`},
		{`{"QueryLanguage": "JSONata", "StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Arguments": "{% $states.input.n %}", "End": true}}}`, `the parameters must be an object with FunctionName and Payload, not number`},
	} {
		res, err := x.Run(context.Background(), mustParse(t, tt.def), mustJSON(t, `{"fn": "f", "n": 1, "bad": "a b"}`), engine.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, res, asl.ErrTaskFailed, tt.cause)
	}
}
