package states

import (
	"github.com/aslrun/aslrun/jsonata"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
)

// TaskCache is how a Task's result is cached: its Cache block, or its
// Idempotent / IdempotencyKey / CacheResult / CacheTTL fields, which say
// the same in another way (see docs/agent-states.md).
//
// It is immutable after Parse and safe for concurrent use.
type TaskCache struct {
	// Enabled is false for a Cache block with "Enabled": false (nothing
	// is looked up or stored).
	Enabled bool
	// Key is the cache key's text (Key, or IdempotencyKey; may hold
	// {{$.path}} placeholders, read on the effective input) and KeyExpr
	// computes it (Key.$, IdempotencyKey.$); without either the key is
	// the Task's input to its agent.
	Key     Text
	KeyExpr *jsonpath.Expr
	// KeyJSONata computes the key of a JSONata Task (a Key or
	// IdempotencyKey that is a "{% … %}" expression, on $states.input);
	// a JSONata Task's other Key is literal text.
	KeyJSONata *jsonata.Template
	// TTL is how long an entry is returned; zero means DefaultCacheTTL.
	TTL TTL
	// Scope is CacheScopeExecution, CacheScopeWorkflow (the default) or
	// CacheScopeGlobal, which an engine honours only in executions of a
	// workflow an admin registered; ScopePointer is the JSON Pointer of
	// the Scope field ("" when the default), for the engine's refusal.
	Scope        string
	ScopePointer string
	// StateHash is the hex SHA-256 of the state's definition (canonical
	// JSON): a changed state (its prompt, model, tools…) never hits what
	// the state stored before.
	StateHash string
}

// Cache scopes: who shares an entry.
const (
	CacheScopeExecution = "execution"
	CacheScopeWorkflow  = "workflow"
	CacheScopeGlobal    = "global"
)

// DefaultCacheTTL is a cache entry's TTL when none is given: a day.
const DefaultCacheTTL = 24 * 60 * 60 // seconds

// idempotencyFields are the Task fields that say how its result is
// cached without a Cache block.
var idempotencyFields = []string{"Idempotent", "IdempotencyKey", "IdempotencyKey.$", "CacheResult", "CacheTTL"}

// taskCache reads a Task's Cache block or its idempotency fields; nil when
// it has neither.
func (p *parser) taskCache(o *object, jsonataState bool) *TaskCache {
	var idem []string
	for _, k := range idempotencyFields {
		if _, ok := o.m[k]; ok {
			idem = append(idem, k)
		}
	}
	_, hasCache := o.m["Cache"]
	switch {
	case hasCache && len(idem) > 0:
		for _, k := range idem {
			o.used[k] = true
		}
		o.used["Cache"] = true
		o.errorf(idem[0], "%s and a Cache block say the same thing: give one of them", idem[0])
		return nil
	case hasCache:
		return p.cacheBlock(o, jsonataState)
	case len(idem) > 0:
		return p.idempotency(o, jsonataState)
	}
	return nil
}

// cacheBlock reads the Cache block.
func (p *parser) cacheBlock(o *object, jsonataState bool) *TaskCache {
	const key = "Cache"
	co, _ := o.child(key, key)
	if co == nil {
		return nil
	}
	defer co.done(key)
	c := &TaskCache{Enabled: true, Scope: CacheScopeWorkflow, StateHash: stateHash(o.m)}
	if enabled, ok := co.boolean("Enabled"); ok {
		c.Enabled = enabled
	}
	c.Key, c.KeyExpr, c.KeyJSONata = p.cacheKey(co, "Key", jsonataState)
	c.TTL, _ = co.ttl("TTL")
	if s, ok := co.enum("Scope", []string{CacheScopeExecution, CacheScopeWorkflow, CacheScopeGlobal}, nil); ok {
		c.Scope, c.ScopePointer = s, co.at("Scope")
	}
	return c
}

// idempotency reads Idempotent, IdempotencyKey(.$), CacheResult and
// CacheTTL: a Task that is Idempotent, or whose result is cached
// (CacheResult), returns the result stored under its key within CacheTTL
// instead of calling its agent again, shared by the workflow's
// executions.
func (p *parser) idempotency(o *object, jsonataState bool) *TaskCache {
	c := &TaskCache{Scope: CacheScopeWorkflow, StateHash: stateHash(o.m)}
	idem, hasIdem := o.boolean("Idempotent")
	result, hasResult := o.boolean("CacheResult")
	c.Enabled = idem || result
	if hasIdem && idem && hasResult && !result {
		o.errorf("CacheResult", "CacheResult false with Idempotent true: an idempotent Task returns the result stored for its key, so it must keep it")
	}
	if !c.Enabled {
		for _, k := range []string{"IdempotencyKey", "IdempotencyKey.$", "CacheTTL"} {
			if _, ok := o.m[k]; ok {
				o.errorf(k, "%s needs Idempotent or CacheResult true", k)
			}
		}
	}
	c.Key, c.KeyExpr, c.KeyJSONata = p.cacheKey(o, "IdempotencyKey", jsonataState)
	c.TTL, _ = o.ttl("CacheTTL")
	return c
}

// cacheKey reads a cache key field: on a JSONPath Task, text with
// {{$.path}} placeholders or key.$; on a JSONata Task, a "{% … %}"
// expression or literal text (key.$ is refused).
func (p *parser) cacheKey(o *object, key string, jsonataState bool) (Text, *jsonpath.Expr, *jsonata.Template) {
	if !jsonataState {
		t, e := p.textOrExpr(o, key)
		return t, e, nil
	}
	if _, ok := o.m[key+".$"]; ok {
		o.used[key+".$"] = true
		o.errorf(key+".$", "%s.$ is a JSONPath field, not valid on a JSONata state: use %s with a \"{%% … %%}\" expression", key, key)
	}
	v, ok := o.get(key)
	if !ok {
		return Text{}, nil, nil
	}
	str, isStr := v.(string)
	switch {
	case !isStr:
		o.errorf(key, "%s must be a string (literal text or a \"{%% … %%}\" expression), not %s", key, jsonvalue.TypeName(v))
	case str == "":
		o.errorf(key, "%s must not be empty", key)
	case jsonata.IsExpression(str):
		return Text{}, nil, p.compileJSONata(o, key, v)
	default:
		return Text{Source: str}, nil, nil
	}
	return Text{}, nil, nil
}

// stateHash is the hex SHA-256 of a state's canonical JSON.
func stateHash(m map[string]any) string {
	h, err := jsonvalue.CanonicalHash(m)
	if err != nil {
		return ""
	}
	return h
}
