package states

import (
	"errors"
	"strings"
	"testing"
)

func TestParseResource(t *testing.T) {
	tests := []struct {
		arn  string
		want Resource
	}{
		{"arn:aws:lambda:us-east-1:123456789012:function:classify", Resource{Kind: LambdaFunction, Partition: "aws", Region: "us-east-1", Account: "123456789012", Service: "lambda", Name: "classify"}},
		{"arn:aws:lambda:us-east-1:123456789012:function:classify:$LATEST", Resource{Kind: LambdaFunction, Partition: "aws", Region: "us-east-1", Account: "123456789012", Service: "lambda", Name: "classify", Qualifier: "$LATEST"}},
		{"arn:aws-us-gov:lambda:us-gov-west-1:123456789012:function:a_b-c:7", Resource{Kind: LambdaFunction, Partition: "aws-us-gov", Region: "us-gov-west-1", Account: "123456789012", Service: "lambda", Name: "a_b-c", Qualifier: "7"}},
		{"arn:aws:states:::lambda:invoke", Resource{Kind: LambdaInvoke, Partition: "aws", Service: "lambda", Action: "invoke"}},
		{"arn:aws:states:::lambda:invoke.waitForTaskToken", Resource{Kind: LambdaInvoke, Partition: "aws", Service: "lambda", Action: "invoke", Pattern: PatternWaitForTaskToken}},
		{"arn:aws:states:::dynamodb:putItem", Resource{Kind: Integration, Partition: "aws", Service: "dynamodb", Action: "putItem"}},
		{"arn:aws:states:::ecs:runTask.sync", Resource{Kind: Integration, Partition: "aws", Service: "ecs", Action: "runTask", Pattern: PatternSync}},
		{"arn:aws:states:::states:startExecution.sync:2", Resource{Kind: Integration, Partition: "aws", Service: "states", Action: "startExecution", Pattern: PatternSync2}},
		{"arn:aws:states:::aws-sdk:s3:getObject", Resource{Kind: Integration, Partition: "aws", Service: "aws-sdk", Action: "s3:getObject"}},
		{"arn:aws-cn:states:cn-north-1:123456789012:activity:review", Resource{Kind: Activity, Partition: "aws-cn", Region: "cn-north-1", Account: "123456789012", Service: "states", Name: "review"}},
	}
	for _, tt := range tests {
		got, err := ParseResource(tt.arn)
		if err != nil {
			t.Errorf("ParseResource(%q) error: %v", tt.arn, err)
			continue
		}
		tt.want.ARN = tt.arn
		if got != tt.want {
			t.Errorf("ParseResource(%q) = %+v, want %+v", tt.arn, got, tt.want)
		}
	}
}

func TestParseResourceRefuses(t *testing.T) {
	for _, arn := range []string{
		"",
		"classify",
		"arn:aws:lambda:us-east-1:12345678901:function:f",    // 11-digit account
		"arn:aws:lambda:us-east-1:123456789012:function:",    // no name
		"arn:aws:lambda:us-east-1:123456789012:function:a b", // space
		"arn:aws:lambda:us-east-1:123456789012:layer:l",
		"arn:aws:lambda::123456789012:function:f", // no region
		"arn:aws:lambda:us-east-1:123456789012:function:f:a:b",
		"arn:aws:states:::lambda:delete",
		"arn:aws:states:::lambda:invoke.sync",
		"arn:aws:states:::dynamodb:putItem.async",
		"arn:aws:states:::dynamodb",
		"arn:aws:states:us-east-1:123456789012:stateMachine:m",
		"arn:aws:states:us-east-1:123456789012:activity:",
		"arn:other:states:::sqs:sendMessage",
		"arn:aws:s3:::bucket",
		"arn:aws:states:::sqs:sendMessage\n",
	} {
		_, err := ParseResource(arn)
		var re *ResourceError
		if !errors.As(err, &re) {
			t.Errorf("ParseResource(%q) error = %v, want a *ResourceError", arn, err)
			continue
		}
		if re.ARN != arn || !strings.HasPrefix(err.Error(), "Value is not a valid resource ARN") {
			t.Errorf("ParseResource(%q) error = %v", arn, err)
		}
	}
}

func TestFunctionName(t *testing.T) {
	tests := []struct {
		in, name, qualifier string
		ok                  bool
	}{
		{"score", "score", "", true},
		{"score:prod", "score", "prod", true},
		{"score:$LATEST", "score", "$LATEST", true},
		{"123456789012:function:score", "score", "", true},
		{"123456789012:function:score:3", "score", "3", true},
		{"arn:aws:lambda:us-east-1:123456789012:function:score", "score", "", true},
		{"arn:aws:lambda:us-east-1:123456789012:function:score:3", "score", "3", true},
		{"", "", "", false},
		{"not a name", "", "", false},
		{"a:b:c", "", "", false},
		{"arn:aws:lambda:us-east-1:123456789012:layer:x", "", "", false},
	}
	for _, tt := range tests {
		name, q, ok := FunctionName(tt.in)
		if name != tt.name || q != tt.qualifier || ok != tt.ok {
			t.Errorf("FunctionName(%q) = %q, %q, %v, want %q, %q, %v", tt.in, name, q, ok, tt.name, tt.qualifier, tt.ok)
		}
	}
}

func TestResourceAgentRefs(t *testing.T) {
	m, err := Parse([]byte(`{"StartAt": "F", "States": {
	  "F": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:classify:2", "Next": "I"},
	  "I": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "123456789012:function:score", "Payload.$": "$"}, "Next": "D"},
	  "D": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName.$": "$.fn"}, "Next": "S"},
	  "S": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage", "Credentials": {"RoleArn.$": "$.role"}, "End": true}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := m.AgentRefs()
	want := []AgentRef{
		{State: "F", Field: "Resource", Agent: "classify", Resource: "arn:aws:lambda:us-east-1:123456789012:function:classify:2", Function: "arn:aws:lambda:us-east-1:123456789012:function:classify:2"},
		{State: "I", Field: "Resource", Agent: "score", Resource: "arn:aws:states:::lambda:invoke", Function: "123456789012:function:score"},
		{State: "S", Field: "Resource", Resource: "arn:aws:states:::sqs:sendMessage"},
	}
	if len(got) != len(want) {
		t.Fatalf("AgentRefs() = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("AgentRefs()[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	if s := m.States["S"].(*Task); s.Credentials == nil || s.Agent != "" {
		t.Errorf("S: Credentials %v, Agent %q; want a template and no agent", s.Credentials, s.Agent)
	}
}

// FuzzParseResource checks that any string is either refused with a
// *ResourceError or parsed into a Resource that keeps the ARN and has a
// kind.
func FuzzParseResource(f *testing.F) {
	for _, s := range []string{
		"arn:aws:lambda:us-east-1:123456789012:function:f:1",
		"arn:aws:states:::lambda:invoke.waitForTaskToken",
		"arn:aws:states:::aws-sdk:s3:getObject",
		"arn:aws:states:::states:startExecution.sync:2",
		"arn:aws:states:eu-west-1:123456789012:activity:a",
		"arn:aws:s3:::b", "arn:", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseResource(s)
		if err != nil {
			var re *ResourceError
			if !errors.As(err, &re) || re.ARN != s {
				t.Fatalf("ParseResource(%q) error %v is not a *ResourceError for it", s, err)
			}
			return
		}
		if r.ARN != s || r.Kind == 0 || r.Partition == "" {
			t.Fatalf("ParseResource(%q) = %+v", s, r)
		}
		if (r.Kind == LambdaFunction) != (r.AgentName() != "") {
			t.Fatalf("ParseResource(%q): AgentName %q for kind %d", s, r.AgentName(), r.Kind)
		}
		if _, _, ok := FunctionName(s); ok && r.Kind != LambdaFunction {
			t.Fatalf("ParseResource(%q): a function name parsed as kind %d", s, r.Kind)
		}
	})
}
