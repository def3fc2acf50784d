package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
)

// taskChain builds n Task states that each call their agent with the
// document's payload and keep the result at $.payload; target is the
// field naming the agent, and params the Task's Parameters.
func taskChain(n int, target, params, resultPath string) string {
	return chain(n, func(_ int, next string) string {
		return fmt.Sprintf(`{"Type":"Task",%s,"Parameters":%s,"ResultSelector":{"payload.$":"%s"},"ResultPath":"$",%s}`, target, params, resultPath, next)
	})
}

// BenchmarkTaskChain100 runs 100 Task states on the 1 KiB payload, each
// calling an echoing agent: named by Agent, by a Lambda function ARN, and
// through lambda:invoke (whose response wraps the result). The time is
// per state.
func BenchmarkTaskChain100(b *testing.B) {
	for _, bc := range []struct{ name, target, params, result string }{
		{"Agent", `"Agent":"echo"`, `{"payload.$":"$.payload"}`, "$.payload"},
		{"FunctionARN", `"Resource":"arn:aws:lambda:us-east-1:123456789012:function:echo"`, `{"payload.$":"$.payload"}`, "$.payload"},
		{"LambdaInvoke", `"Resource":"arn:aws:states:::lambda:invoke"`, `{"FunctionName":"echo","Payload":{"payload.$":"$.payload"}}`, "$.Payload.payload"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m, input := benchMachine(b, taskChain(100, bc.target, bc.params, bc.result))
			reg := agents.NewRegistry()
			echo := agents.Func(func(_ context.Context, req *agents.Request) (any, error) { return req.Input, nil })
			if err := reg.Register("echo", echo); err != nil {
				b.Fatal(err)
			}
			x := engine.New(engine.Config{Agents: reg})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := x.Run(ctx, m, input, engine.StartOptions{ID: "bench"})
				if err != nil || res.Status != engine.StatusSucceeded {
					b.Fatalf("run: %v %+v", err, res)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/state")
		})
	}
}
