package states

// PROVISIONAL: the agent-native blocks are only checked to be objects here;
// their full validation is being written.

// Extensions holds the agent-native top-level blocks of a definition.
type Extensions struct {
	Budget         any
	Memory         any
	DefaultTools   any
	ToolCategories any
	Governance     any
}

// MemoryConfig is a Task's or Pass's Memory block.
type MemoryConfig struct{ Raw any }

// ContextConfig is a Task's Context block.
type ContextConfig struct{ Raw any }

// ToolsConfig is a Task's Tools block.
type ToolsConfig struct{ Raw any }

// BudgetConfig is a Task's Budget block.
type BudgetConfig struct{ Raw any }

// GuardrailsConfig is a Task's Guardrails block.
type GuardrailsConfig struct{ Raw any }

// ReasoningConfig is a Task's Reasoning block.
type ReasoningConfig struct{ Raw any }

// Approval pauses the run for a human decision.
type Approval struct {
	Common
	Choices []ChoiceRule
	Default string
	Catch   []Catcher
}

// Debate lets several agents deliberate to a decision.
type Debate struct {
	Common
	Retry []Retrier
	Catch []Catcher
}

// Checkpoint saves a named snapshot of the execution.
type Checkpoint struct {
	Common
	// CheckpointName is the checkpoint's Name field.
	CheckpointName string
}

func (p *parser) rawBlock(o *object, key string) (any, bool) {
	v, ok := o.get(key)
	if !ok {
		return nil, false
	}
	if _, isObj := v.(map[string]any); !isObj {
		o.errorf(key, "%s must be an object", key)
		return nil, false
	}
	return v, true
}

func (p *parser) extensions(o *object) *Extensions {
	var e Extensions
	any := false
	for _, k := range []string{"Budget", "Memory", "DefaultTools", "ToolCategories", "Governance"} {
		v, ok := p.rawBlock(o, k)
		if !ok {
			continue
		}
		any = true
		switch k {
		case "Budget":
			e.Budget = v
		case "Memory":
			e.Memory = v
		case "DefaultTools":
			e.DefaultTools = v
		case "ToolCategories":
			e.ToolCategories = v
		case "Governance":
			e.Governance = v
		}
	}
	if !any {
		return nil
	}
	return &e
}

func (p *parser) memory(o *object, key string) *MemoryConfig {
	if v, ok := p.rawBlock(o, key); ok {
		return &MemoryConfig{Raw: v}
	}
	return nil
}

func (p *parser) contextConfig(o *object, key string) *ContextConfig {
	if v, ok := p.rawBlock(o, key); ok {
		return &ContextConfig{Raw: v}
	}
	return nil
}

func (p *parser) tools(o *object, key string) *ToolsConfig {
	if v, ok := p.rawBlock(o, key); ok {
		return &ToolsConfig{Raw: v}
	}
	return nil
}

func (p *parser) budget(o *object, key string) *BudgetConfig {
	if v, ok := p.rawBlock(o, key); ok {
		return &BudgetConfig{Raw: v}
	}
	return nil
}

func (p *parser) guardrails(o *object, key string) *GuardrailsConfig {
	if v, ok := p.rawBlock(o, key); ok {
		return &GuardrailsConfig{Raw: v}
	}
	return nil
}

func (p *parser) reasoning(o *object, key string) *ReasoningConfig {
	if v, ok := p.rawBlock(o, key); ok {
		return &ReasoningConfig{Raw: v}
	}
	return nil
}

func (p *parser) approval(o *object, c Common) *Approval {
	s := &Approval{Common: c}
	for _, k := range []string{"Prompt", "Prompt.$", "Options", "Timeout", "Escalation", "ResultPath", "Editable"} {
		o.has(k)
	}
	if arr, ok := p.array(o, "Choices"); ok {
		s.Choices = p.choiceRules(o, arr, "Choices")
	}
	s.Default, _ = o.str("Default")
	s.Catch = p.catch(o)
	return s
}

func (p *parser) debate(o *object, c Common) *Debate {
	s := &Debate{Common: c}
	for _, k := range []string{"Agents", "Topic", "TopicPath", "Topic.$", "Rounds", "Communication", "Consensus", "Parameters", "ResultPath"} {
		o.has(k)
	}
	s.Retry = p.retry(o)
	s.Catch = p.catch(o)
	return s
}

func (p *parser) checkpoint(o *object, c Common) *Checkpoint {
	s := &Checkpoint{Common: c}
	s.CheckpointName, _ = o.requiredStr("Name")
	o.has("Storage")
	o.has("TTL")
	return s
}
