package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRunResources runs definitions written for AWS Step Functions: their
// Resources resolve to mocked agents by function name or through the
// agents file's Resources, and one that resolves to nothing is refused
// before any execution exists.
func TestRunResources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lambda := writeFile(t, dir, "lambda.json", `{"StartAt":"Score","States":{"Score":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"arn:aws:lambda:us-east-1:123456789012:function:score","Payload.$":"$"},"OutputPath":"$.Payload","Next":"Notify"},"Notify":{"Type":"Task","Resource":"arn:aws:states:::sns:publish","Credentials":{"RoleArn":"arn:aws:iam::123456789012:role/Notifier"},"ResultPath":null,"End":true}}}`)
	mock := writeFile(t, dir, "mock.json", `{"score":{"0":{"Return":{"score":7}}},"arn:aws:states:::sns:publish":{"0":{"Return":{"MessageId":"m"}}}}`)
	scoreOnly := writeFile(t, dir, "score.json", `{"score":{"0":{"Return":{"score":7}}}}`)
	// The agents file runs both resources with one exec agent echoing
	// what it receives: the function's Payload, here the input.
	echo := writeFile(t, dir, "agents.json", `{"Echo":{"Type":"exec","Command":["cat"]},"Resources":{"arn:aws:lambda:us-east-1:123456789012:function:score":"Echo","arn:aws:states:::sns:publish":"Echo"}}`)
	missing := writeFile(t, dir, "missing.json", `{"Echo":{"Type":"exec","Command":["cat"]},"Resources":{"arn:aws:states:::sns:publish":"Pager"}}`)

	cases := []struct {
		name   string
		args   []string
		code   int
		out    string
		stderr []string
	}{
		{"mocked by function name and ARN", []string{"run", lambda, "--mock", mock}, 0, `{"score":7}`, []string{"execution: "}},
		{"agents file Resources", []string{"run", lambda, "--agents", echo, "--input", `{"a":1}`}, 0, `{"a":1}`, []string{"execution: "}},
		{"integration unresolved", []string{"run", lambda, "--mock", scoreOnly}, exitUsage, "", []string{
			"state Notify: Resource arn:aws:states:::sns:publish resolves to no agent: map it to one in the agents file's Resources",
		}},
		{"mapped to a missing agent, function unresolved", []string{"run", lambda, "--agents", missing}, exitUsage, "", []string{
			`state Notify: Resource arn:aws:states:::sns:publish is mapped to agent "Pager", which is not mocked, in the agents file or registered`,
			`state Score: Resource arn:aws:states:::lambda:invoke resolves to no agent: give an agent named "score" or map the resource in the agents file's Resources`,
		}},
	}
	db := filepath.Join(dir, "run.db")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := invoke(t, "", append(tc.args, "--db", db)...)
			if code != tc.code {
				t.Fatalf("code %d, want %d (stdout %q, stderr %q)", code, tc.code, out, errOut)
			}
			if tc.out != "" && !jsonEqual(t, out, tc.out) {
				t.Errorf("stdout %s, want %s", out, tc.out)
			}
			for _, s := range tc.stderr {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr %q, want it to contain %q", errOut, s)
				}
			}
			if tc.code != 0 && strings.Contains(errOut, "execution: ") {
				t.Errorf("stderr %q: an execution was started", errOut)
			}
		})
	}
}
