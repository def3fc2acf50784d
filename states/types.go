package states

import (
	"time"

	"github.com/aslrun/aslrun/governance"
	"github.com/aslrun/aslrun/jsonata"
	"github.com/aslrun/aslrun/jsonpath"
)

// The query languages of a definition (QueryLanguage).
const (
	JSONPath = "JSONPath"
	JSONata  = "JSONata"
)

// Machine is a validated, immutable state machine: a whole definition or a
// nested one (a Map's ItemProcessor, a Parallel branch). It is safe for
// concurrent use and never modified after Parse.
type Machine struct {
	// Comment is the top-level Comment.
	Comment string
	// StartAt names the first state.
	StartAt string
	// States maps each state name to its state.
	States map[string]State
	// Version is the top-level Version ("1.0" when absent); empty in nested machines.
	Version string
	// TimeoutSeconds is the execution timeout, 0 when there is none.
	TimeoutSeconds int64
	// QueryLanguage is the machine's query language, JSONPath or JSONata:
	// its own QueryLanguage, else the top-level machine's, else JSONPath.
	QueryLanguage string
	// Extensions holds the agent-native top-level blocks (Budget, Memory,
	// DefaultTools, ToolCategories, Governance); nil when none is set.
	Extensions *Extensions
	// Definition is the decoded definition the machine was parsed from
	// (top-level machines, and the processors of Distributed Maps, which
	// their child executions store), so that it can be stored and parsed
	// again. Never modify it.
	Definition any
	// Lock maps each registry import the definition's Imports named, as
	// written (registry://review@^1.0.0), to the version it resolved to
	// (review@3); nil when there was none. Definition is the expanded
	// definition, without Imports (see ParseWith).
	Lock map[string]string

	// redact are the Redact paths of its Tasks (RedactPaths).
	redact []*jsonpath.Path
}

// State is one state of a machine. Its concrete type is one of *Pass,
// *Task, *Choice, *Wait, *Succeed, *Fail, *Map, *Parallel, *Approval,
// *Debate or *Checkpoint.
type State interface {
	// Base returns the fields every state has.
	Base() *Common
}

// Common holds the fields shared by every kind of state.
type Common struct {
	// Name is the state's name in its machine.
	Name string
	// Type is the state's Type field ("Pass", "Task", …).
	Type string
	// Comment is the state's Comment.
	Comment string
	// QueryLanguage is the state's query language, JSONPath or JSONata: its
	// own QueryLanguage, else its machine's. A JSONata state has none of the
	// JSONPath fields (InputPath, OutputPath, Assign as a jsonpath.Template,
	// Parameters, ResultSelector, ResultPath and the …Path fields) and uses
	// its JSONata ones instead.
	QueryLanguage string
	// Output is a JSONata state's Output; nil when absent (the default
	// output: the result, else the input).
	Output *jsonata.Template
	// AssignJSONata is a JSONata state's Assign block; nil when absent.
	AssignJSONata *jsonata.Template
	// InputPath selects the state's effective input.
	InputPath IOPath
	// OutputPath selects the state's output.
	OutputPath IOPath
	// Next is the state that follows; empty when End is set or for states
	// that route themselves (Choice) or end the run (Succeed, Fail).
	Next string
	// End marks a terminal state.
	End bool
	// Events are the events the state emits (OnEnter, OnExit, OnError);
	// nil when absent. eventsPtr locates the block.
	Events    *StateEvents
	eventsPtr string
	// Progress is how the state's progress is followed (its milestones,
	// where its agent reports a percentage, how a Map's items or a
	// Parallel's branches add up); nil when absent.
	Progress *StateProgress
	// Assign sets variables after the state ran; nil when absent.
	Assign *jsonpath.Template
	// WritePolicy is the state's own write policy (Task, Pass, Map,
	// Parallel, Approval, Debate), which narrows the workflow's; nil when
	// absent.
	WritePolicy *governance.Policy
}

// Base returns c.
func (c *Common) Base() *Common { return c }

// JSONata reports whether the state's query language is JSONata.
func (c *Common) JSONata() bool { return c.QueryLanguage == JSONata }

// IOPath is an InputPath or OutputPath: Path nil means "$" (everything);
// Null means the field was null, which yields an empty object.
type IOPath struct {
	Path *jsonpath.Path
	Null bool
}

// ResultPath says where a state's result goes in its raw input: Path nil
// means "$" (the result replaces the input); Discard means null (the result
// is dropped and the output is the raw input).
type ResultPath struct {
	Path    *jsonpath.Path
	Discard bool
}

// Retrier is one entry of a Retry array.
type Retrier struct {
	// ErrorEquals lists the error names this retrier matches.
	ErrorEquals []string
	// IntervalSeconds is the delay before the first retry (default 1).
	IntervalSeconds int64
	// MaxAttempts is the number of retries (default 3; 0 never retries).
	MaxAttempts int64
	// BackoffRate multiplies the delay after each retry (default 2.0).
	BackoffRate float64
	// MaxDelaySeconds caps the delay; 0 means no cap.
	MaxDelaySeconds int64
	// JitterStrategy is "FULL" or "NONE" (default).
	JitterStrategy string
}

// Catcher is one entry of a Catch array.
type Catcher struct {
	// ErrorEquals lists the error names this catcher matches.
	ErrorEquals []string
	// Next is the state to continue at.
	Next string
	// ResultPath says where the error object goes (default "$").
	ResultPath ResultPath
	// Assign sets variables when the catcher is taken; nil when absent.
	Assign *jsonpath.Template
	// Output and AssignJSONata are a JSONata catcher's Output (nil: the
	// error output) and Assign.
	Output        *jsonata.Template
	AssignJSONata *jsonata.Template
}

// Pass passes its input to its output, optionally injecting a fixed Result
// or a Parameters template.
type Pass struct {
	Common
	// Result is the fixed result, taken literally; valid when HasResult.
	Result    any
	HasResult bool
	// ResultSize is the size of Result written as compact JSON, in bytes.
	ResultSize int
	// Parameters builds the result from the effective input; nil when absent.
	Parameters *jsonpath.Template
	// ResultPath places the result in the raw input.
	ResultPath ResultPath
	// Memory reads memory into the input and writes results to it
	// (agent-native); nil when absent.
	Memory *MemoryConfig
}

// Task calls a registered agent, named by Agent or resolved from an AWS
// Resource ARN.
type Task struct {
	Common
	// Agent is the name of the registered agent to call; empty when the
	// Task has a Resource instead.
	Agent string
	// Resource is the Task's Resource ARN, parsed; nil when it names an
	// Agent. Exactly one of Agent and Resource is set.
	Resource *Resource
	// Credentials is the Credentials block ({"RoleArn": …} or
	// {"RoleArn.$": …}), evaluated against the effective input and handed
	// to the agent; nil when absent. CredentialsJSONata is a JSONata
	// Task's.
	Credentials        *jsonpath.Template
	CredentialsJSONata *jsonata.Template
	// Parameters builds the agent's input; nil passes the effective input.
	Parameters *jsonpath.Template
	// Arguments is a JSONata Task's agent input; nil passes the input.
	Arguments *jsonata.Template
	// ResultSelector reshapes the agent's result; nil when absent.
	ResultSelector *jsonpath.Template
	// ResultPath places the result in the raw input.
	ResultPath ResultPath
	// TimeoutSeconds bounds one agent call; 0 means no limit.
	TimeoutSeconds int64
	// TimeoutSecondsPath reads the timeout from the effective input.
	TimeoutSecondsPath *jsonpath.Path
	// HeartbeatSeconds is the longest time between heartbeats; 0 means none.
	HeartbeatSeconds int64
	// HeartbeatSecondsPath reads the heartbeat interval from the effective input.
	HeartbeatSecondsPath *jsonpath.Path
	// TimeoutSecondsExpr and HeartbeatSecondsExpr are a JSONata Task's
	// timeouts given as expressions; nil when literal or absent.
	TimeoutSecondsExpr   *jsonata.Template
	HeartbeatSecondsExpr *jsonata.Template
	// Retry and Catch handle the state's errors.
	Retry []Retrier
	Catch []Catcher
	// The agent-native blocks; nil when absent, except Tools, which is the
	// workflow's DefaultTools (shared, not copied) when the Task has no
	// Tools block of its own.
	Memory     *MemoryConfig
	Context    *ContextConfig
	Tools      *ToolsConfig
	Budget     *BudgetConfig
	Guardrails *GuardrailsConfig
	Reasoning  *ReasoningConfig
	// Model is the model the agent is asked to use, and its fallbacks;
	// nil when absent (the agent's own choice).
	Model *ModelChoice
	// Generation holds the sampling settings of the agent's calls; nil
	// when absent (the agent's own settings).
	Generation *Generation
	// Streaming says how the agent's text is streamed as it is
	// generated; nil when absent (the agent's text is not streamed).
	Streaming *StreamingConfig
	// Cache says how the Task's result is cached (Cache, or Idempotent
	// and its fields); nil when it is not.
	Cache *TaskCache
	// Feedback is what people may say of the Task's output once it ran;
	// nil when absent.
	Feedback *FeedbackConfig
	// Audit says how the Task is logged, measured and traced, and which
	// paths hold secrets; nil when absent.
	Audit *AuditConfig
	// Metadata is free-form data about the Task (an object whose fields
	// may end in .$, read on its effective input), recorded with its
	// events; nil when absent.
	Metadata *jsonpath.Template
	// MetadataJSONata is a JSONata Task's Metadata (an object whose
	// "{% … %}" strings are expressions on $states.input); nil when absent.
	MetadataJSONata *jsonata.Template
}

// Choice routes to the Next of the first matching rule, or to Default.
type Choice struct {
	Common
	// Choices are the rules, tried in order.
	Choices []ChoiceRule
	// Default is the state taken when no rule matches; empty means none.
	Default string
}

// ChoiceRule is a top-level Choice rule: a condition and where it leads.
type ChoiceRule struct {
	Condition
	// Next is the state taken when the condition holds.
	Next string
	// Assign sets variables when this rule is taken; nil when absent.
	Assign *jsonpath.Template
	// ConditionExpr is a JSONata rule's Condition (a boolean literal or an
	// expression); Output and AssignJSONata apply when the rule is taken.
	ConditionExpr *jsonata.Template
	Output        *jsonata.Template
	AssignJSONata *jsonata.Template
}

// Condition is a Boolean expression of a Choice rule: either a compound
// (And, Or, Not) or a comparison of Variable with Operator.
type Condition struct {
	And []Condition
	Or  []Condition
	Not *Condition

	// Variable is the value compared (a path, or an intrinsic via Variable.$).
	Variable *jsonpath.Expr
	// Operator is the comparison, like "StringEquals" or "NumericLessThanPath".
	Operator string
	// Value is the literal operand of a non-Path operator.
	Value any
	// ValuePath is the operand of a *Path operator.
	ValuePath *jsonpath.Path
	// Timestamp is the parsed operand of a Timestamp* operator.
	Timestamp time.Time
}

// Wait delays the run for a duration or until a timestamp.
type Wait struct {
	Common
	// Seconds is the delay when HasSeconds.
	Seconds    int64
	HasSeconds bool
	// Timestamp is the wake-up time when not zero.
	Timestamp time.Time
	// SecondsPath and TimestampPath read the delay or time from the input.
	SecondsPath   *jsonpath.Path
	TimestampPath *jsonpath.Path
	// SecondsExpr and TimestampExpr are a JSONata Wait's Seconds and
	// Timestamp given as expressions.
	SecondsExpr   *jsonata.Template
	TimestampExpr *jsonata.Template
}

// Succeed ends the run (or branch) successfully.
type Succeed struct {
	Common
}

// Fail ends the run (or branch) with an error.
type Fail struct {
	Common
	// Error and Cause are the literal error name and cause ("" when absent).
	Error string
	Cause string
	// ErrorPath and CausePath read them from the input (a path or an
	// intrinsic); nil when absent.
	ErrorPath *jsonpath.Expr
	CausePath *jsonpath.Expr
	// ErrorExpr and CauseExpr are a JSONata Fail's Error and Cause given as
	// expressions.
	ErrorExpr *jsonata.Template
	CauseExpr *jsonata.Template
}

// Map runs a nested machine once per item of an array.
type Map struct {
	Common
	// ItemsPath selects the array (a path or an intrinsic); nil means "$".
	ItemsPath *jsonpath.Expr
	// ItemSelector builds each item's input (ItemSelector or the legacy
	// Parameters); nil passes the item itself.
	ItemSelector *jsonpath.Template
	// Items and ItemSelectorJSONata are a JSONata Map's Items (nil: the
	// input) and ItemSelector.
	Items               *jsonata.Template
	ItemSelectorJSONata *jsonata.Template
	// MaxConcurrencyExpr, ToleratedFailureCountExpr and
	// ToleratedFailurePercentageExpr are a JSONata Map's settings given as
	// expressions.
	MaxConcurrencyExpr             *jsonata.Template
	ToleratedFailureCountExpr      *jsonata.Template
	ToleratedFailurePercentageExpr *jsonata.Template
	// Processor is the machine run per item (ItemProcessor or the legacy Iterator).
	Processor *Machine
	// Mode is "INLINE" or "DISTRIBUTED": a Distributed Map runs each item
	// (or batch) as a child execution, whose definition is
	// Processor.Definition.
	Mode string
	// ExecutionType is the ProcessorConfig ExecutionType ("" when absent).
	ExecutionType string
	// MaxConcurrency bounds concurrent items; 0 means unlimited.
	MaxConcurrency     int64
	MaxConcurrencyPath *jsonpath.Path
	// ToleratedFailureCount and ToleratedFailurePercentage (and their path
	// forms) allow some items to fail; the Has flags say whether they are set.
	ToleratedFailureCount          int64
	HasToleratedFailureCount       bool
	ToleratedFailureCountPath      *jsonpath.Path
	ToleratedFailurePercentage     float64
	HasToleratedFailurePercentage  bool
	ToleratedFailurePercentagePath *jsonpath.Path
	// Label names a Distributed Map's map run and child executions
	// ("" means the state's name).
	Label string
	// ItemReader, ItemBatcher and ResultWriter are a Distributed Map's
	// (nil when absent, and always on an INLINE Map).
	ItemReader   *ItemReader
	ItemBatcher  *ItemBatcher
	ResultWriter *ResultWriter
	// ResultSelector, ResultPath, Retry and Catch as on Task.
	ResultSelector *jsonpath.Template
	ResultPath     ResultPath
	Retry          []Retrier
	Catch          []Catcher
}

// Parallel runs several nested machines on the same input.
type Parallel struct {
	Common
	// Branches are run concurrently; the result has one entry per branch.
	Branches []*Machine
	// Parameters builds the branches' input; nil passes the effective input.
	Parameters *jsonpath.Template
	// Arguments is a JSONata Parallel's branch input; nil passes the input.
	Arguments *jsonata.Template
	// ResultSelector, ResultPath, Retry and Catch as on Task.
	ResultSelector *jsonpath.Template
	ResultPath     ResultPath
	Retry          []Retrier
	Catch          []Catcher
}
