package jsonata

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aslrun/aslrun/jsonvalue"
)

// The expressions of issue 23: without a budget the first never ends,
// the second took 90 s and 480 MB.
const (
	bombNested = `$count([1..10000000].([1..10000000]))`
	bombMapped = `[1..10000000].($*2) ~> $count()`
)

// compileExpr compiles one expression as a template of field Output.
func compileExpr(t testing.TB, src string) *Template {
	t.Helper()
	tm, err := CompileTemplate("{% "+src+" %}", "Output")
	if err != nil {
		t.Fatalf("CompileTemplate(%q): %v", src, err)
	}
	return tm
}

// TestBudgetRefusesBombs: with no configuration, the bombs fail at once
// with an *Error naming the field, the expression and the limit.
func TestBudgetRefusesBombs(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want error
		msg  string
	}{
		{bombNested, ErrMemory, "exceeded the memory budget of 67108864 bytes"},
		{bombMapped, ErrMemory, "exceeded the memory budget of 67108864 bytes"},
		// A loop that builds little but runs long.
		{`$reduce([1..1000000], function($a, $b){ $a + $b + $b + $b + $b + $b })`, ErrSteps, "exceeded the evaluation budget of 10000000 steps"},
	} {
		t.Run(tc.src, func(t *testing.T) {
			start := time.Now()
			_, err := compileExpr(t, tc.src).Eval(t.Context(), &Scope{}, "Output")
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, tc.want) {
				t.Fatalf("Eval = %v, want an *Error wrapping %v", err, tc.want)
			}
			want := "The JSONata expression '" + tc.src + "' specified for the field 'Output' " + tc.msg
			if !strings.HasPrefix(e.Msg, want) {
				t.Errorf("Msg = %q, want it to start with %q", e.Msg, want)
			}
			t.Logf("refused in %v", time.Since(start))
		})
	}
}

// TestBudgetLimits: configured limits are kept, each counted as values
// are made (before a range, a padding or a replacement is allocated).
func TestBudgetLimits(t *testing.T) {
	for _, tc := range []struct {
		src    string
		limits Limits
		want   error
	}{
		{`[1..1000].($)`, Limits{Steps: 100}, ErrSteps},
		{`$sum([1..100].($ * 2))`, Limits{Steps: 1000}, nil},
		{`[1..100]`, Limits{Memory: 1000}, ErrMemory},
		{`[1..20]`, Limits{Memory: 1000}, nil},
		{`$pad("", 1000000000)`, Limits{}, ErrMemory},
		{`$pad("x", -1000000000, "ab")`, Limits{}, ErrMemory},
		{`$replace($join([1..100000].("a")), "a", $join([1..1000].("b")))`, Limits{}, ErrMemory},
		{`$reduce([1..100000], function($s, $v){ $s & "0123456789" })`, Limits{}, ErrMemory},
		{`$states.input ~> |x|{"y": 1}|`, Limits{Memory: 100}, ErrMemory},
		{`$sort([1..2000], function($a, $b){ $a < $b })`, Limits{Steps: 10000}, ErrSteps},
		{`[1..10000]`, Limits{Steps: -1, Memory: -1}, nil},
		// Built-in functions and comparisons count the items they walk.
		{`$reduce([1..1000], function($a, $b){ $sum($states.input.big) })`, Limits{Steps: 100_000}, ErrSteps},
		{`$reduce([1..1000], function($a, $b){ $states.input.big = $states.input.big })`, Limits{Steps: 100_000}, ErrSteps},
		{`$reduce([1..1000], function($a, $b){ $states.input.nested = $states.input.nested })`, Limits{Steps: 100_000}, ErrSteps},
		{`$reduce([1..1000], function($a, $b){ $states.input.nested in [0, $states.input.nested] })`, Limits{Steps: 100_000}, ErrSteps},
		{`$reduce([1..1000], function($a, $b){ $distinct([$states.input.nested]) })`, Limits{Steps: 100_000}, ErrSteps},
		{`$reduce([1..1000], function($a, $b){ $string($states.input.nested) })`, Limits{Steps: 100_000}, ErrSteps},
		{`$reduce([1..1000], function($a, $b){ "" & $states.input.nested })`, Limits{Steps: 100_000}, ErrSteps},
		{`$reduce([1..1000], function($a, $b){ $states.input.zeros ? 1 : 0 })`, Limits{Steps: 100_000}, ErrSteps},
		{`$reduce([1..1000], function($a, $b){ [$states.input.zeros] and true })`, Limits{Steps: 100_000}, ErrSteps},
		{`$reduce([1..1000], function($a, $b){ [1][$states.input.zeros] })`, Limits{Steps: 100_000}, ErrSteps},
		{`$reduce([1..10], function($a, $b){ $sum($states.input.big) })`, Limits{Steps: 200_000}, nil},
	} {
		t.Run(tc.src, func(t *testing.T) {
			big, zeros := make([]any, 10_000), make([]any, 10_000)
			for i := range big {
				big[i], zeros[i] = json.Number("1"), json.Number("0")
			}
			s := &Scope{Input: map[string]any{"x": []any{map[string]any{}, map[string]any{}, map[string]any{}}, "big": big, "nested": map[string]any{"a": big}, "zeros": zeros}, Limits: tc.limits}
			_, err := compileExpr(t, tc.src).Eval(t.Context(), s, "Output")
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("Eval = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestRangeLimit: a range of more than 10,000,000 items fails as in
// JSONata (D2014), with or without a budget.
func TestRangeLimit(t *testing.T) {
	for _, l := range []Limits{{}, {Steps: -1, Memory: -1}} {
		_, err := compileExpr(t, `[0..10000000]`).Eval(t.Context(), &Scope{Limits: l}, "Output")
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(e.Msg, "D2014: The size of the sequence allocated by the range operator (..) must not exceed 1e7") {
			t.Errorf("Eval with %+v = %v, want D2014", l, err)
		}
	}
}

// TestEvalCancelled: an evaluation ends with its context's error, not a
// query error, when the context is done before it starts, when its
// deadline passes, and when it is cancelled while it runs.
func TestEvalCancelled(t *testing.T) {
	// Bombs of the same shape that do not allocate hundreds of megabytes
	// before their first step: without a budget they run for hours.
	unbounded := Limits{Steps: -1, Memory: -1}
	bombs := []string{bombNested, bombMapped, `$count([1..100000].([1..100000]))`, `[1..100000].([1..100000].($*2)) ~> $count()`}

	t.Run("before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		for _, src := range bombs {
			if _, err := compileExpr(t, src).Eval(ctx, &Scope{Limits: unbounded}, "Output"); !errors.Is(err, context.Canceled) {
				t.Errorf("Eval(%s) = %v, want context.Canceled", src, err)
			}
		}
	})
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithDeadline(t.Context(), time.Now())
		defer cancel()
		<-ctx.Done()
		if _, err := compileExpr(t, bombNested).Eval(ctx, &Scope{}, "Output"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Eval = %v, want context.DeadlineExceeded", err)
		}
	})
	for _, src := range bombs[2:] {
		t.Run("while running "+src, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			checks := 0
			l := unbounded
			l.Progress = func() {
				// The evaluation is under way: stop it.
				if checks++; checks == 3 {
					cancel()
				}
			}
			_, err := compileExpr(t, src).Eval(ctx, &Scope{Limits: l}, "Output")
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Eval = %v, want context.Canceled", err)
			}
			if checks != 3 {
				t.Errorf("the evaluation checked its context %d times, want it to stop at the check that saw the cancellation (3)", checks)
			}
		})
	}
}

// TestEvalNoGlobalLock: while one evaluation runs (held inside, between
// two of its steps), another completes.
func TestEvalNoGlobalLock(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	running, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	l := Limits{Steps: -1, Memory: -1, Progress: func() {
		once.Do(func() {
			close(running)
			<-release
		})
	}}
	bomb := compileExpr(t, `$count([1..100000].([1..100000]))`)
	done := make(chan error, 1)
	go func() {
		_, err := bomb.Eval(ctx, &Scope{Limits: l}, "Output")
		done <- err
	}()
	<-running
	got, err := compileExpr(t, `$uppercase($states.input.a) & $string($sum([1..10]))`).Eval(t.Context(), scope(t, `{"a":"x"}`, nil), "Output")
	if err != nil || got != "X55" {
		t.Errorf("Eval beside a running one = %v, %v; want \"X55\"", got, err)
	}
	close(release)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the bomb ended with %v, want context.Canceled", err)
	}
}

// TestDeepData: walking data nested deeper than the evaluator nests, or
// returning it, fails instead of exhausting the stack.
func TestDeepData(t *testing.T) {
	var v any = "leaf"
	for range 5000 {
		v = map[string]any{"a": v}
	}
	deep := `$reduce([1..5000], function($a, $b){ {"a": $a} }, 0)`
	// (Returning the deep value itself fails earlier: see
	// TestResultDeeperThanDocument.)
	for _, src := range []string{`$states.input.**`, `$states.input ~> |a|{"b": 1}|`, "$string(" + deep + ")"} {
		_, err := compileExpr(t, src).Eval(t.Context(), &Scope{Input: v}, "Output")
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(e.Msg, "U1001") {
			t.Errorf("Eval(%s) = %v, want U1001", src, err)
		}
	}
	got, err := compileExpr(t, "("+deep+") = ("+deep+")").Eval(t.Context(), &Scope{}, "Output")
	if err != nil || got != false {
		t.Errorf("comparing values nested past the limit = %v, %v; want false", got, err)
	}
}

// TestResultDeeperThanDocument: a result that nests deeper than a JSON
// document may (64 levels) fails the evaluation, which the store would
// otherwise refuse to record, leaving its execution stuck; 64 levels pass.
func TestResultDeeperThanDocument(t *testing.T) {
	nest := func(n int) string {
		return fmt.Sprintf(`$reduce([1..%d], function($a, $b){ {"a": $a} }, 0)`, n)
	}
	v, err := compileExpr(t, nest(64)).Eval(t.Context(), &Scope{}, "Output")
	if err != nil {
		t.Fatalf("64 levels: %v", err)
	}
	if b, err := jsonvalue.Marshal(v); err != nil {
		t.Fatal(err)
	} else if _, err := jsonvalue.Decode(b); err != nil {
		t.Errorf("64 levels do not decode back: %v", err)
	}
	for _, src := range []string{nest(65), "[" + nest(64) + "]", `[[[` + nest(62) + `]]]`} {
		_, err := compileExpr(t, src).Eval(t.Context(), &Scope{}, "Output")
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(e.Msg, "deeper than 64 levels") {
			t.Errorf("Eval(%s) = %v, want a result too deep", src, err)
		}
	}
}

// FuzzEval checks that evaluating any expression on a small input never
// panics in the evaluator, and ends within a small budget.
func FuzzEval(f *testing.F) {
	for _, s := range []struct{ src, input string }{
		{"$states.input.a.b", `{"a":{"b":[1,2]}}`},
		{"$map($states.input, function($v, $i){ $v * $i })", `[1,2,3]`},
		{"$states.input{ k: $sum(v) }", `[{"k":"a","v":1},{"k":"a","v":2}]`},
		{"$states.input^(>n).n", `[{"n":1},{"n":3}]`},
		{"[1..5][$ % 2 = 0]", `null`},
		{"$reduce([1..1000000], function($a,$b){$a+$b})", `{}`},
		{"$states.input ~> |a|{'c': 1}, ['b']|", `{"a":{"b":1}}`},
		{"$replace('abc', /b/, function($m){ $uppercase($m.match) })", `{}`},
		{"$string($states.input.**)", `{"a":[{"b":"c"}]}`},
		{"($f := function($x)<n:n>{$x*2}; $f(3))", `{}`},
		{"$pad('a', 100000000)", `{}`},
		{"$split('a,b', ',')[1]", `{}`},
		{"$sort($states.input, function($a, $b){ $a > $b })", `[3,1,2]`},
	} {
		f.Add(s.src, s.input)
	}
	f.Fuzz(func(t *testing.T, src, input string) {
		tm, err := CompileTemplate("{% "+src+" %}", "Output")
		if err != nil {
			return
		}
		in, err := decodeSmall(input)
		if err != nil {
			return
		}
		s := &Scope{Input: in, Limits: Limits{Steps: 100_000, Memory: 1 << 20}}
		start := time.Now()
		_, err = tm.Eval(context.Background(), s, "Output")
		if d := time.Since(start); d > 10*time.Second {
			// A hundred thousand steps take milliseconds: something runs
			// outside the budget.
			t.Fatalf("Eval(%q) took %v", src, d)
		}
		var e *Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("Eval(%q) = %v, want nil or an *Error", src, err)
		}
		if e != nil && strings.Contains(e.Msg, "the evaluation failed (") {
			t.Fatalf("Eval(%q) panicked: %s", src, e.Msg)
		}
	})
}

// decodeSmall decodes a fuzzed input of at most 4 KiB.
func decodeSmall(s string) (any, error) {
	if len(s) > 4096 {
		return nil, errors.New("input too large")
	}
	return jsonvalue.Decode([]byte(s))
}
