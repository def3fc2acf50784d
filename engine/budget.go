package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

func (u *Usage) add(v agents.Usage) {
	u.Add(&Usage{InputTokens: v.InputTokens, OutputTokens: v.OutputTokens, Tokens: v.Total(), Cost: v.Cost})
}

// Add adds v (nil: nothing) to u. Costs are summed to 1e-9 of the
// currency unit, so that totals read as written (0.1 + 0.2 is 0.3, not
// 0.30000000000000004).
func (u *Usage) Add(v *Usage) {
	if v == nil {
		return
	}
	u.InputTokens += v.InputTokens
	u.OutputTokens += v.OutputTokens
	u.Tokens += v.Tokens
	u.Cost = math.Round((u.Cost+v.Cost)*1e9) / 1e9
}

// json returns u as a JSON value, for history and checkpoints.
func (u Usage) json() map[string]any {
	return map[string]any{
		"inputTokens": jsonvalue.IntNumber(u.InputTokens), "outputTokens": jsonvalue.IntNumber(u.OutputTokens),
		"tokens": jsonvalue.IntNumber(u.Tokens), "cost": jsonvalue.FloatNumber(u.Cost),
	}
}

// checkpointBudget is what a checkpoint keeps of the budget: the totals
// and the notices given.
func checkpointBudget(u Usage, notices []string) map[string]any {
	b := map[string]any{"usage": u.json()}
	if len(notices) > 0 {
		list := make([]any, len(notices))
		for i, n := range notices {
			list[i] = n
		}
		b["notices"] = list
	}
	return b
}

// budgetFromCheckpoint reads what checkpointBudget wrote; a checkpoint
// written before budgets existed has none.
func budgetFromCheckpoint(v any) (Usage, []string, error) {
	var u Usage
	obj, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return u, nil, nil
		}
		return u, nil, fmt.Errorf("checkpoint budget is %s, not an object", jsonvalue.TypeName(v))
	}
	usage, _ := obj["usage"].(map[string]any)
	for k, dst := range map[string]*int64{"inputTokens": &u.InputTokens, "outputTokens": &u.OutputTokens, "tokens": &u.Tokens} {
		if n, isNum := usage[k].(json.Number); isNum {
			i, isInt := jsonvalue.Int64(n)
			if !isInt {
				return u, nil, fmt.Errorf("checkpoint budget: %s is %s, not an integer", k, n)
			}
			*dst = i
		}
	}
	if n, isNum := usage["cost"].(json.Number); isNum {
		f, valid := jsonvalue.Float64(n)
		if !valid {
			return u, nil, fmt.Errorf("checkpoint budget: cost is %s, not a number", n)
		}
		u.Cost = f
	}
	var notices []string
	list, _ := obj["notices"].([]any)
	for _, n := range list {
		if s, isStr := n.(string); isStr {
			notices = append(notices, s)
		}
	}
	return u, notices, nil
}

// checkStateBudget reports a call's usage over its state's Budget.
func (h *stateRun) checkStateBudget(b *states.BudgetConfig, u Usage) error {
	if b == nil {
		return nil
	}
	var over string
	switch {
	case b.MaxTokens > 0 && u.Tokens > b.MaxTokens:
		over = fmt.Sprintf("used %d tokens, over its Budget.MaxTokens of %d", u.Tokens, b.MaxTokens)
	case b.MaxInputTokens > 0 && u.InputTokens > b.MaxInputTokens:
		over = fmt.Sprintf("used %d input tokens, over its Budget.MaxInputTokens of %d", u.InputTokens, b.MaxInputTokens)
	case b.MaxOutputTokens > 0 && u.OutputTokens > b.MaxOutputTokens:
		over = fmt.Sprintf("used %d output tokens, over its Budget.MaxOutputTokens of %d", u.OutputTokens, b.MaxOutputTokens)
	case b.MaxCost > 0 && u.Cost > b.MaxCost:
		cur := h.r.currency()
		over = fmt.Sprintf("spent %s %s, over its Budget.MaxCost of %s %s", money(u.Cost), cur, money(b.MaxCost), cur)
	default:
		return nil
	}
	return asl.Errorf(asl.ErrBudgetExceeded, "state '%s' %s", h.name(), over)
}

// currency is the workflow Budget's currency, USD without one.
func (r *run) currency() string {
	if e := r.m.Extensions; e != nil && e.Budget != nil {
		return e.Budget.Currency
	}
	return "USD"
}

func money(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// spend adds a call's usage to the execution's totals (and to the scope's
// uncommitted usage, committed with the call's outcome), records budget
// alerts, and reports the workflow Budget exceeded when its OnExceed is
// Fail.
func (h *stateRun) spend(u Usage) error {
	r := h.r
	if u == (Usage{}) {
		return nil
	}
	h.sc.callsMu.Lock()
	if h.sc.usage == nil {
		h.sc.usage = &Usage{}
	}
	h.sc.usage.Add(&u)
	h.used.Add(&u)
	h.sc.callsMu.Unlock()
	r.mu.Lock()
	r.usage.Add(&u)
	total := r.usage
	r.mu.Unlock()
	var b *states.WorkflowBudget
	if e := r.m.Extensions; e != nil {
		b = e.Budget
	}
	if b == nil {
		return nil
	}
	// Alerts measure against MaxCost, or MaxTokens without one.
	share := 0.0
	switch {
	case b.MaxCost > 0:
		share = total.Cost / b.MaxCost
	case b.MaxTokens > 0:
		share = float64(total.Tokens) / float64(b.MaxTokens)
	}
	for i, a := range b.Alerts {
		key := "alert:" + strconv.Itoa(i)
		if share >= a.At && r.notice(key) {
			r.ownEvent(Event{Type: EventBudgetAlert, State: h.name(), Scope: h.sc.prefix, Document: h.raw, Detail: map[string]any{
				"at": jsonvalue.FloatNumber(a.At), "message": a.Message, "usage": total.json(),
			}})
			h.sc.addNotice(key)
		}
	}
	over := overBudget(b, total, false)
	if over == "" {
		return nil
	}
	cause := "the execution " + over
	if b.OnExceed == "UseFallback" {
		if r.notice("fallback") {
			r.ownEvent(Event{Type: EventBudgetFallback, State: h.name(), Scope: h.sc.prefix, Document: h.raw,
				Detail: map[string]any{"reason": cause, "usage": total.json(), "model": b.FallbackModel}})
			h.sc.addNotice("fallback")
		}
		return nil
	}
	if b.OnExceed == "Continue" {
		if r.notice("exceeded") {
			r.ownEvent(Event{Type: EventBudgetOverridden, State: h.name(), Scope: h.sc.prefix, Document: h.raw,
				Detail: map[string]any{"reason": cause, "usage": total.json()}})
			h.sc.addNotice("exceeded")
		}
		return nil
	}
	r.ownEvent(Event{Type: EventBudgetExceeded, State: h.name(), Scope: h.sc.prefix, Document: h.raw,
		Detail: map[string]any{"reason": cause, "usage": total.json()}})
	return asl.Errorf(asl.ErrBudgetExceeded, "%s", cause)
}

// overBudget says how total passes b's limits ("" when it does not): over
// a limit, or with reached, at it.
func overBudget(b *states.WorkflowBudget, total Usage, reached bool) string {
	past := func(used, limit float64) bool { return used > limit || reached && used == limit }
	switch {
	case b.MaxTokens > 0 && past(float64(total.Tokens), float64(b.MaxTokens)):
		return fmt.Sprintf("has used %d tokens, the workflow Budget.MaxTokens is %d", total.Tokens, b.MaxTokens)
	case b.MaxCost > 0 && past(total.Cost, b.MaxCost):
		return fmt.Sprintf("has spent %s %s, the workflow Budget.MaxCost is %s %s", money(total.Cost), b.Currency, money(b.MaxCost), b.Currency)
	}
	return ""
}

// workflowBudgetSpent reports, before a call, a workflow Budget already
// spent when its OnExceed is Fail.
func (h *stateRun) workflowBudgetSpent() error {
	var b *states.WorkflowBudget
	if e := h.r.m.Extensions; e != nil {
		b = e.Budget
	}
	if b == nil || b.OnExceed == "Continue" || b.OnExceed == "UseFallback" {
		return nil
	}
	h.r.mu.Lock()
	total := h.r.usage
	h.r.mu.Unlock()
	if over := overBudget(b, total, true); over != "" {
		return asl.Errorf(asl.ErrBudgetExceeded, "state '%s' may not call its agent: the execution %s", h.name(), over)
	}
	return nil
}

// keepsModel reports whether a Task's Budget.Priority ("critical" or
// "high") keeps its own model once the workflow Budget is used up and
// says UseFallback.
func keepsModel(s *states.Task) bool {
	return s.Budget != nil && (s.Budget.Priority == "critical" || s.Budget.Priority == "high")
}

// budgetFallback returns the model a call is to use because the workflow
// Budget is used up and its OnExceed is UseFallback ("" otherwise).
func (h *stateRun) budgetFallback() string {
	e := h.r.m.Extensions
	if e == nil || e.Budget == nil || e.Budget.OnExceed != "UseFallback" {
		return ""
	}
	h.r.mu.Lock()
	total := h.r.usage
	h.r.mu.Unlock()
	if overBudget(e.Budget, total, true) == "" {
		return ""
	}
	return e.Budget.FallbackModel
}

// notice marks a one-time notice (a budget alert) as given and reports
// whether it was new.
func (r *run) notice(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.notices[key] {
		return false
	}
	if r.notices == nil {
		r.notices = make(map[string]bool)
	}
	r.notices[key] = true
	return true
}

// addNotice keeps a budget notice to commit with the scope's next commit.
func (sc *scope) addNotice(key string) {
	sc.callsMu.Lock()
	sc.notices = append(sc.notices, key)
	sc.callsMu.Unlock()
}

// budgetLeft reports, in the middle of a call, a budget the call has
// used up: the state's Budget with the call's usage so far (reached
// counts: the next spending would pass it), or the workflow's with the
// execution's usage and the call's.
func (h *stateRun) budgetLeft(s *states.Task, usage *callUsage) error {
	used, _ := usage.get()
	if b := s.Budget; b != nil {
		var over string
		switch {
		case b.MaxTokens > 0 && used.Tokens >= b.MaxTokens:
			over = fmt.Sprintf("has used %d tokens of its Budget.MaxTokens of %d", used.Tokens, b.MaxTokens)
		case b.MaxInputTokens > 0 && used.InputTokens >= b.MaxInputTokens:
			over = fmt.Sprintf("has used %d input tokens of its Budget.MaxInputTokens of %d", used.InputTokens, b.MaxInputTokens)
		case b.MaxOutputTokens > 0 && used.OutputTokens >= b.MaxOutputTokens:
			over = fmt.Sprintf("has used %d output tokens of its Budget.MaxOutputTokens of %d", used.OutputTokens, b.MaxOutputTokens)
		case b.MaxCost > 0 && used.Cost >= b.MaxCost:
			cur := h.r.currency()
			over = fmt.Sprintf("has spent %s %s of its Budget.MaxCost of %s %s", money(used.Cost), cur, money(b.MaxCost), cur)
		}
		if over != "" {
			return asl.Errorf(asl.ErrBudgetExceeded, "state '%s' %s: its agent may not spend more", h.name(), over)
		}
	}
	var wb *states.WorkflowBudget
	if e := h.r.m.Extensions; e != nil {
		wb = e.Budget
	}
	if wb == nil || wb.OnExceed == "Continue" || wb.OnExceed == "UseFallback" {
		return nil
	}
	h.r.mu.Lock()
	total := h.r.usage
	h.r.mu.Unlock()
	total.Add(&used)
	if over := overBudget(wb, total, true); over != "" {
		return asl.Errorf(asl.ErrBudgetExceeded, "state '%s': its agent may not spend more: the execution %s", h.name(), over)
	}
	return nil
}
