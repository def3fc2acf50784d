package states

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// cacheTask is a workflow whose one Task, Classify, has the Cache block %s.
const cacheTask = `{"StartAt":"Classify","States":{"Classify":{"Type":"Task","Agent":"Classifier","Cache":%s,"End":true}}}`

// TestTaskCacheScope: Scope execution, workflow and global are accepted
// (global with the pointer of its field, for the engine to refuse it in
// an unregistered execution); absent is workflow; anything else is
// refused at the Scope field.
func TestTaskCacheScope(t *testing.T) {
	for _, tc := range []struct {
		block, scope, pointer string
	}{
		{`{}`, CacheScopeWorkflow, ""},
		{`{"Scope":"workflow"}`, CacheScopeWorkflow, "/States/Classify/Cache/Scope"},
		{`{"Scope":"execution"}`, CacheScopeExecution, "/States/Classify/Cache/Scope"},
		{`{"Scope":"global","Key.$":"$.text","TTL":"7d"}`, CacheScopeGlobal, "/States/Classify/Cache/Scope"},
	} {
		t.Run(tc.block, func(t *testing.T) {
			m, err := Parse(fmt.Appendf(nil, cacheTask, tc.block))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			c := m.States["Classify"].(*Task).Cache
			if c == nil || c.Scope != tc.scope || c.ScopePointer != tc.pointer {
				t.Fatalf("Cache = %+v, want Scope %q at %q", c, tc.scope, tc.pointer)
			}
		})
	}
	for _, tc := range []struct {
		block, msg string
	}{
		{`{"Scope":"Global"}`, `must be "execution", "workflow" or "global", not "Global"`},
		{`{"Scope":"everyone"}`, `not "everyone"`},
		{`{"Scope":""}`, `not ""`},
		{`{"Scope":3}`, "must be a string"},
	} {
		t.Run(tc.block, func(t *testing.T) {
			_, err := Parse(fmt.Appendf(nil, cacheTask, tc.block))
			var list ErrorList
			if !errors.As(err, &list) || len(list) != 1 {
				t.Fatalf("Parse = %v, want one problem", err)
			}
			if got := list[0]; got.Pointer != "/States/Classify/Cache/Scope" || got.State != "Classify" || !strings.Contains(got.Msg, tc.msg) {
				t.Errorf("problem = %s at %s (%s), want %q at /States/Classify/Cache/Scope", got.Msg, got.Pointer, got.State, tc.msg)
			}
		})
	}
}

// TestTaskCacheJSONataKey: a JSONata Task's Key and IdempotencyKey are a
// "{% %}" expression or literal text; their .$ forms, and keys that are
// not strings, are refused at the field.
func TestTaskCacheJSONataKey(t *testing.T) {
	const task = `{"QueryLanguage":"JSONata","StartAt":"C","States":{"C":{"Type":"Task","Agent":"A",%s,"End":true}}}`
	for _, tc := range []struct {
		fields  string
		literal string
		expr    bool
	}{
		{`"Cache":{"Key":"{% $states.input.id %}"}`, "", true},
		{`"Cache":{"Key":"plain {{$.not}} a placeholder"}`, "plain {{$.not}} a placeholder", false},
		{`"Cache":{}`, "", false},
		{`"Idempotent":true,"IdempotencyKey":"{% $states.input.id %}"`, "", true},
	} {
		m, err := Parse(fmt.Appendf(nil, task, tc.fields))
		if err != nil {
			t.Errorf("Parse(%s): %v", tc.fields, err)
			continue
		}
		c := m.States["C"].(*Task).Cache
		if c == nil || c.Key.Source != tc.literal || (c.KeyJSONata != nil) != tc.expr || c.KeyExpr != nil {
			t.Errorf("Parse(%s): Cache = %+v", tc.fields, c)
		}
	}
	for _, tc := range []struct{ fields, msg string }{
		{`"Cache":{"Key.$":"$.id"}`, `/States/C/Cache/Key.$ (C): Key.$ is a JSONPath field, not valid on a JSONata state: use Key with a "{% … %}" expression`},
		{`"Idempotent":true,"IdempotencyKey.$":"$.id"`, `/States/C/IdempotencyKey.$ (C): IdempotencyKey.$ is a JSONPath field, not valid on a JSONata state: use IdempotencyKey with a "{% … %}" expression`},
		{`"Cache":{"Key":5}`, `/States/C/Cache/Key (C): Key must be a string (literal text or a "{% … %}" expression), not number`},
		{`"Cache":{"Key":""}`, `/States/C/Cache/Key (C): Key must not be empty`},
		{`"Cache":{"Key":"{% $states.input. %}"}`, `/States/C/Cache/Key (C)`},
	} {
		_, err := Parse(fmt.Appendf(nil, task, tc.fields))
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Parse(%s) = %v, want %q", tc.fields, err, tc.msg)
		}
	}
}
