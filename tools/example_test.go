package tools_test

import (
	"context"
	"errors"
	"fmt"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/tools"
)

func ExampleTyped() {
	type convertIn struct {
		Amount float64 `json:"amount" jsonschema:"the amount to convert"`
		From   string  `json:"from"`
		To     string  `json:"to,omitempty" jsonschema:"the target currency, EUR by default"`
	}
	type convertOut struct {
		Amount   float64 `json:"amount"`
		Currency string  `json:"currency"`
	}
	convert, err := tools.Typed("convert", "Converts an amount between currencies.",
		func(ctx context.Context, in convertIn) (convertOut, error) {
			if in.From != "USD" {
				return convertOut{}, fmt.Errorf("no rate for %s", in.From)
			}
			return convertOut{Amount: in.Amount * 0.5, Currency: "EUR"}, nil
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	reg := tools.NewRegistry()
	if err := reg.Register(convert); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(convert.Input))

	call := func(args string) {
		v, _ := jsonvalue.Decode([]byte(args))
		t, _ := reg.Lookup("convert")
		out, err := t.Run(context.Background(), nil, v.(map[string]any))
		var ae *asl.Error
		if errors.As(err, &ae) {
			fmt.Println(ae.Name, "-", ae.Cause)
			return
		}
		data, _ := jsonvalue.Marshal(out)
		fmt.Println(string(data))
	}
	call(`{"amount": 10, "from": "USD"}`)
	call(`{"amount": "ten", "from": "USD", "rate": 2}`)
	call(`{"amount": 10, "from": "GBP"}`)
	// Output:
	// {"type":"object","properties":{"amount":{"type":"number","description":"the amount to convert"},"from":{"type":"string"},"to":{"type":"string","description":"the target currency, EUR by default"}},"required":["amount","from"],"additionalProperties":false}
	// {"amount":5,"currency":"EUR"}
	// Agent.InvalidInput - tool "convert": the arguments do not match its input schema: /amount must be a number, not a string (type); /rate is not allowed (additionalProperties)
	// Agent.ToolError - tool "convert": no rate for GBP
}
