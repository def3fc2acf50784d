package tools

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aslrun/aslrun/agents"
)

type benchIn struct {
	City  string   `json:"city"`
	Days  int      `json:"days"`
	Units string   `json:"units,omitempty"`
	Tags  []string `json:"tags,omitempty"`
}

type benchOut struct {
	City  string    `json:"city"`
	Temps []float64 `json:"temps"`
}

func forecast(_ context.Context, in benchIn) (benchOut, error) {
	return benchOut{City: in.City, Temps: []float64{21.5, 19}}, nil
}

// BenchmarkToolsCall compares calling a Typed tool through the registry
// (Lookup, ValidateInput and the call, which decodes the arguments into
// the Go type and normalises the result) with calling its function
// directly.
func BenchmarkToolsCall(b *testing.B) {
	ctx := context.Background()
	b.Run("direct", func(b *testing.B) {
		in := benchIn{City: "Lyon", Days: 2, Tags: []string{"a", "b"}}
		var out benchOut
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if out, err = forecast(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
		if out.City != "Lyon" {
			b.Fatal(out)
		}
	})
	b.Run("registry", func(b *testing.B) {
		r := NewRegistry()
		tool, err := Typed("weather.forecast", "Forecasts the weather.", forecast)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Register(tool); err != nil {
			b.Fatal(err)
		}
		args := map[string]any{"city": "Lyon", "days": json.Number("2"), "tags": []any{"a", "b"}}
		req := &agents.Request{Agent: "Planner"}
		b.ReportAllocs()
		for b.Loop() {
			t, ok := r.Lookup("weather.forecast")
			if !ok {
				b.Fatal("not found")
			}
			if err := t.ValidateInput(args); err != nil {
				b.Fatal(err)
			}
			if _, err := t.Call(ctx, req, args); err != nil {
				b.Fatal(err)
			}
		}
	})
}
