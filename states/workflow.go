package states

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/aslrun/aslrun/jsonata"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
)

// Workflow is a Workflow state: it runs another workflow of the registry
// as a child execution on the state's input (or Input, built from it) and
// waits for it; the child's output goes to ResultPath, its failure is the
// state's error (for Retry and Catch).
//
// It is immutable after Parse and safe for concurrent use.
type Workflow struct {
	Common
	// WorkflowID is the field as written: "name", "name@3" (a version),
	// "name@prod" (an alias), "name@1.2.0" or "name@^1.2.0" (a semver
	// label or constraint); Name and Ref are its two parts (Ref "" for
	// the latest version).
	WorkflowID string
	Name, Ref  string
	// Input builds the child's input from the effective input (fields
	// ending in .$ are paths or intrinsics); nil passes the effective
	// input.
	Input *jsonpath.Template
	// Arguments builds a JSONata Workflow state's child input ("{% … %}"
	// expressions on $states.input); nil passes the state's input.
	Arguments *jsonata.Template
	// Timeout is how long the child may run before it is stopped and the
	// state fails with States.Timeout; zero means no limit.
	Timeout    time.Duration
	ResultPath ResultPath
	Retry      []Retrier
	Catch      []Catcher
}

// maxWorkflowName bounds a WorkflowId's name, as the registry does.
const maxWorkflowName = 128

// workflowState reads a Workflow state.
func (p *parser) workflowState(o *object, c Common) *Workflow {
	s := p.workflowCommon(o, c)
	if v, ok := o.get("Input"); ok {
		if _, isObj := v.(map[string]any); !isObj {
			o.errorf("Input", "Input must be an object (its fields may end in .$), not %s", jsonvalue.TypeName(v))
		} else {
			s.Input = p.template(o, "Input")
		}
	}
	s.ResultPath = p.resultPath(o, "ResultPath")
	s.Catch = p.catch(o, false)
	return s
}

// jsonataWorkflow reads a JSONata Workflow state: Arguments builds the
// child's input, Output and Assign what the state makes of its result
// ($states.result).
func (p *parser) jsonataWorkflow(o *object, c Common) *Workflow {
	s := p.workflowCommon(o, c)
	s.Arguments = p.jsonataTemplate(o, "Arguments")
	s.Catch = p.catch(o, true)
	return s
}

// workflowCommon reads the fields a Workflow state has in both query
// languages: WorkflowId, Timeout, Retry.
func (p *parser) workflowCommon(o *object, c Common) *Workflow {
	s := &Workflow{Common: c}
	if id, ok := o.requiredStr("WorkflowId"); ok {
		s.WorkflowID = id
		name, ref, hasRef := strings.Cut(id, "@")
		switch {
		case !ValidWorkflowName(name):
			o.errorf("WorkflowId", "WorkflowId %q must be a registered workflow's name (1 to %d letters, digits, '-', '_' or '.'), optionally @version, @alias or @semver", id, maxWorkflowName)
		case hasRef && (ref == "" || strings.ContainsAny(ref, " \t\n@/")):
			o.errorf("WorkflowId", "WorkflowId %q: after @ comes a version number, an alias or a semver label or constraint, like %s@3, %s@prod or %s@^1.2.0", id, name, name, name)
		default:
			s.Name, s.Ref = name, ref
		}
	}
	s.Timeout = p.workflowTimeout(o)
	s.Retry = p.retry(o)
	return s
}

// workflowTimeout reads a Workflow state's Timeout: whole seconds (a
// number) or a duration string, as an Approval's.
func (p *parser) workflowTimeout(o *object) time.Duration {
	v, ok := o.get("Timeout")
	if !ok {
		return 0
	}
	if n, isNum := v.(json.Number); isNum {
		secs, isInt := jsonvalue.Int64(n)
		if !isInt || secs < 1 || secs > MaxTimeoutSeconds {
			o.errorf("Timeout", "Timeout must be whole seconds from 1 to %d, or a duration (%s), not %s", MaxTimeoutSeconds, durationSyntax, n)
			return 0
		}
		return time.Duration(secs) * time.Second
	}
	d, _ := o.duration("Timeout")
	return d
}

// ValidWorkflowName reports whether name can name a registered workflow:
// 1 to 128 ASCII letters, digits, '-', '_' and '.' (the registry's rule).
func ValidWorkflowName(name string) bool {
	if name == "" || len(name) > maxWorkflowName {
		return false
	}
	for i := range len(name) {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}
