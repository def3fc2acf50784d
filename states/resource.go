package states

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/aslrun/aslrun/jsonvalue"
)

// ResourceKind says what a Task's Resource ARN names.
type ResourceKind int

// The kinds of Resource.
const (
	// LambdaFunction is a Lambda function ARN,
	// arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER]: the agent
	// receives the effective input and its result is the state's result.
	LambdaFunction ResourceKind = iota + 1
	// LambdaInvoke is the optimized integration arn:aws:states:::lambda:invoke:
	// the agent receives Parameters' Payload, and the state's result is
	// the Lambda response AWS returns around the agent's result.
	LambdaInvoke
	// Integration is any other service integration,
	// arn:aws:states:::SERVICE:ACTION[.PATTERN]: the agent receives the
	// effective input and its result is the state's result.
	Integration
	// Activity is arn:aws:states:REGION:ACCOUNT:activity:NAME.
	Activity
)

// The integration patterns a service integration ARN may end with.
const (
	PatternSync             = ".sync"
	PatternSync2            = ".sync:2"
	PatternWaitForTaskToken = ".waitForTaskToken"
)

// Resource is a parsed Task Resource ARN. It is immutable after Parse.
type Resource struct {
	// ARN is the Resource as written.
	ARN string
	// Kind says what ARN names.
	Kind ResourceKind
	// Partition is "aws", "aws-cn" or "aws-us-gov"; Region and Account are
	// empty for service integrations.
	Partition, Region, Account string
	// Service and Action are a service integration's ("lambda", "invoke";
	// "aws-sdk", "s3:getObject"); Pattern is its suffix (PatternSync, …)
	// or empty for request-response.
	Service, Action, Pattern string
	// Name is a Lambda function's or an activity's name, and Qualifier a
	// function ARN's version or alias (empty when absent).
	Name, Qualifier string
	// FunctionName is lambda:invoke's FunctionName parameter when the
	// definition writes it as a literal (a name, a partial or a full
	// function ARN); empty otherwise.
	FunctionName string
}

var (
	partitionRE = `(aws|aws-cn|aws-us-gov)`
	regionRE    = `([a-z]{2}(?:-[a-z]+)+-[0-9]+)`
	accountRE   = `([0-9]{12})`
	functionRE  = regexp.MustCompile(`^arn:` + partitionRE + `:lambda:` + regionRE + `:` + accountRE + `:function:([A-Za-z0-9_-]{1,64})(?::(\$LATEST|[A-Za-z0-9_-]{1,128}))?$`)
	activityRE  = regexp.MustCompile(`^arn:` + partitionRE + `:states:` + regionRE + `:` + accountRE + `:activity:([A-Za-z0-9_.-]{1,80})$`)
	serviceRE   = regexp.MustCompile(`^arn:` + partitionRE + `:states:::([a-z0-9][a-z0-9-]*):([A-Za-z][A-Za-z0-9]*(?::[A-Za-z][A-Za-z0-9]*)?)(\.sync|\.sync:2|\.waitForTaskToken)?$`)
	// A FunctionName parameter: a name, a partial ARN or a full ARN, each
	// with an optional version or alias.
	functionNameRE = regexp.MustCompile(`^(?:(?:arn:` + partitionRE + `:lambda:` + regionRE + `:)?` + accountRE + `:function:)?([A-Za-z0-9_-]{1,64})(?::(\$LATEST|[A-Za-z0-9_-]{1,128}))?$`)
)

// ResourceError is the refusal of a Resource ARN; its message says what is
// wrong with it.
type ResourceError struct {
	ARN string
	Msg string
}

// Error returns AWS's words for an ARN it does not accept, and why.
func (e *ResourceError) Error() string {
	return fmt.Sprintf("Value is not a valid resource ARN: %q: %s", e.ARN, e.Msg)
}

// ParseResource parses a Task's Resource as AWS writes it: a Lambda
// function ARN, a service integration ARN (arn:aws:states:::SERVICE:ACTION
// with an optional .sync, .sync:2 or .waitForTaskToken) or an activity
// ARN. Anything else is a *ResourceError.
func ParseResource(arn string) (Resource, error) {
	bad := func(msg string) (Resource, error) { return Resource{}, &ResourceError{ARN: arn, Msg: msg} }
	if !strings.HasPrefix(arn, "arn:") {
		return bad("an ARN starts with \"arn:\"")
	}
	if m := functionRE.FindStringSubmatch(arn); m != nil {
		return Resource{ARN: arn, Kind: LambdaFunction, Partition: m[1], Region: m[2], Account: m[3], Service: "lambda", Name: m[4], Qualifier: m[5]}, nil
	}
	if m := activityRE.FindStringSubmatch(arn); m != nil {
		return Resource{ARN: arn, Kind: Activity, Partition: m[1], Region: m[2], Account: m[3], Service: "states", Name: m[4]}, nil
	}
	if m := serviceRE.FindStringSubmatch(arn); m != nil {
		r := Resource{ARN: arn, Kind: Integration, Partition: m[1], Service: m[2], Action: m[3], Pattern: m[4]}
		if r.Service == "lambda" {
			if r.Action != "invoke" {
				return bad("the Lambda integration's action is invoke (arn:aws:states:::lambda:invoke)")
			}
			if strings.HasPrefix(r.Pattern, PatternSync) {
				return bad("arn:aws:states:::lambda:invoke has no .sync pattern")
			}
			r.Kind = LambdaInvoke
		}
		return r, nil
	}
	parts := strings.Split(arn, ":")
	if len(parts) < 6 {
		return bad("an ARN has six fields or more: arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE")
	}
	switch parts[2] {
	case "lambda":
		return bad("want arn:PARTITION:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER], with a 12-digit account and a name of letters, digits, '-' and '_'")
	case "states":
		return bad("want arn:PARTITION:states:::SERVICE:ACTION[.sync|.sync:2|.waitForTaskToken] or arn:PARTITION:states:REGION:ACCOUNT:activity:NAME")
	}
	return bad(fmt.Sprintf("service %q is not one a Task calls: use a Lambda function ARN or an arn:aws:states::: service integration", parts[2]))
}

// activityNameRE is the NAME of an activity ARN.
var activityNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,80}$`)

// ValidActivityName reports whether name is one an activity ARN
// (arn:aws:states:REGION:ACCOUNT:activity:NAME) can end with: 1 to 80
// letters, digits, '-', '_' and '.'.
func ValidActivityName(name string) bool { return activityNameRE.MatchString(name) }

// FunctionName returns the function's name in the FunctionName parameter
// of arn:aws:states:::lambda:invoke, which may be a name, a partial ARN
// (ACCOUNT:function:NAME) or a full function ARN, each with an optional
// ":VERSION" or ":ALIAS", returned as qualifier. ok is false when s is
// none of these.
func FunctionName(s string) (name, qualifier string, ok bool) {
	m := functionNameRE.FindStringSubmatch(s)
	if m == nil {
		return "", "", false
	}
	return m[4], m[5], true
}

// AgentName returns the agent a Resource runs when no resources map
// names one: a Lambda function's name, or for lambda:invoke the name in
// its literal FunctionName. It is empty for other resources and for a
// FunctionName computed at run time.
func (r *Resource) AgentName() string {
	switch r.Kind {
	case LambdaFunction:
		return r.Name
	case LambdaInvoke:
		name, _, _ := FunctionName(r.FunctionName)
		return name
	}
	return ""
}

// taskTarget reads what a Task calls: exactly one of Agent and Resource.
// args is the field holding the call's parameters ("Parameters", or
// "Arguments" in JSONata), where lambda:invoke finds its FunctionName.
func (p *parser) taskTarget(o *object, s *Task, args string) {
	_, hasAgent := o.m["Agent"]
	_, hasResource := o.m["Resource"]
	switch {
	case hasAgent && hasResource:
		o.used["Resource"] = true
		o.errorf("Resource", "a Task names exactly one of Agent and Resource, not both")
		s.Agent, _ = o.requiredStr("Agent")
		return
	case !hasResource:
		if _, ok := o.m["Agent"]; !ok {
			o.errorf("", "missing required field Agent (or Resource, an AWS resource ARN resolved to an agent)")
			return
		}
		s.Agent, _ = o.requiredStr("Agent")
		return
	}
	arn, ok := o.requiredStr("Resource")
	if !ok {
		return
	}
	r, err := ParseResource(arn)
	if err != nil {
		o.errorf("Resource", "%v", err)
		return
	}
	if r.Kind == LambdaInvoke {
		r.FunctionName = p.functionName(o, args)
	}
	s.Resource = &r
}

// functionName checks the FunctionName of lambda:invoke's parameters and
// returns it when written as a literal; "" when it is computed at run time.
func (p *parser) functionName(o *object, args string) string {
	v, ok := o.m[args]
	if !ok {
		o.errorf("", "The field 'FunctionName' is required but was missing: arn:aws:states:::lambda:invoke needs %s with FunctionName", args)
		return ""
	}
	params, ok := v.(map[string]any)
	if !ok {
		// A JSONata expression computes the whole object at run time;
		// a value of another type is reported by the template.
		return ""
	}
	ptr := o.at(args)
	if args == "Parameters" {
		if _, dynamic := params["FunctionName.$"]; dynamic {
			return ""
		}
	}
	fv, ok := params["FunctionName"]
	if !ok {
		p.errorf(ptr, o.state, "The field 'FunctionName' is required but was missing")
		return ""
	}
	name, ok := fv.(string)
	if !ok {
		p.errorf(ptr+"/FunctionName", o.state, "FunctionName must be a string, not %s", jsonvalue.TypeName(fv))
		return ""
	}
	if args == "Arguments" && strings.HasPrefix(name, "{%") {
		return ""
	}
	if _, _, ok := FunctionName(name); !ok {
		p.errorf(ptr+"/FunctionName", o.state, "FunctionName %q is not a function name, a partial ARN (ACCOUNT:function:NAME) or a function ARN", name)
		return ""
	}
	return name
}

// credentials checks a Task's Credentials: an object with exactly one of
// RoleArn and RoleArn.$ (RoleArn alone in JSONata). It returns the block
// for the caller to compile as a template.
func (p *parser) credentials(o *object, jsonataState bool) (any, bool) {
	v, ok := o.get("Credentials")
	if !ok {
		return nil, false
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		o.errorf("Credentials", "Credentials must be an object, not %s", jsonvalue.TypeName(v))
		return nil, false
	}
	ptr := o.at("Credentials")
	_, lit := obj["RoleArn"]
	_, path := obj["RoleArn.$"]
	switch {
	case jsonataState && path:
		p.errorf(ptr+"/RoleArn.$", o.state, "RoleArn.$ is a JSONPath field, not valid on a JSONata state: use RoleArn with a \"{%% … %%}\" expression")
		return nil, false
	case lit && path:
		p.errorf(ptr, o.state, "Credentials has both RoleArn and RoleArn.$: give one")
		return nil, false
	case !lit && !path:
		p.errorf(ptr, o.state, "The field 'RoleArn' is required but was missing")
		return nil, false
	}
	good := true
	for _, k := range sortedKeys(obj) {
		if k != "RoleArn" && k != "RoleArn.$" {
			p.errorf(ptr+"/"+jsonvalue.EscapePointer(k), o.state, "field %s is not valid in Credentials (only RoleArn)", k)
			good = false
		}
	}
	if s, ok := obj["RoleArn"].(string); lit && (!ok || s == "") {
		p.errorf(ptr+"/RoleArn", o.state, "RoleArn must be a non-empty string")
		good = false
	}
	return v, good
}

// WaitsForTaskToken reports whether the Resource uses the callback
// pattern (.waitForTaskToken): the state issues a task token, hands it to
// the agent, and waits until the token is sent back.
func (r *Resource) WaitsForTaskToken() bool { return r != nil && r.Pattern == PatternWaitForTaskToken }

// StartsExecution reports whether the Resource is
// arn:aws:states:::states:startExecution (any pattern): an agent mapped to
// it answers, else it starts a child execution of the registered workflow
// its StateMachineArn names, so it needs no agent.
func (r *Resource) StartsExecution() bool {
	return r != nil && r.Kind == Integration && r.Service == "states" && r.Action == "startExecution"
}

// Function returns the Lambda function the Resource calls as written: the
// ARN itself for a function ARN, the literal FunctionName for
// lambda:invoke, and "" otherwise.
func (r *Resource) Function() string {
	switch r.Kind {
	case LambdaFunction:
		return r.ARN
	case LambdaInvoke:
		return r.FunctionName
	}
	return ""
}

// dynamic reports whether the Resource's agent is known only at run time:
// lambda:invoke with a FunctionName that is computed.
func (r *Resource) dynamic() bool { return r.Kind == LambdaInvoke && r.FunctionName == "" }
