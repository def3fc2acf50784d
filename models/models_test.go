package models_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/models"
)

func TestValidate(t *testing.T) {
	ok := models.Config{Provider: "openai", Model: "gpt-4o-mini"}
	tests := []struct {
		name   string
		edit   func(*models.Config)
		fields []string
	}{
		{"valid", func(*models.Config) {}, nil},
		{"valid anthropic with everything", func(c *models.Config) {
			*c = models.Config{Provider: "anthropic", Model: "claude", BaseURL: "https://proxy.example/anthropic", APIKeyEnv: "MY_KEY_2",
				InputPrice: 3e-6, OutputPrice: 15e-6, Timeout: 1, MaxRetries: 3}
		}, nil},
		{"no provider", func(c *models.Config) { c.Provider = "" }, []string{"Provider"}},
		{"unknown provider", func(c *models.Config) { c.Provider = "gemini" }, []string{"Provider"}},
		{"no model", func(c *models.Config) { c.Model = " " }, []string{"Model"}},
		{"relative base URL", func(c *models.Config) { c.BaseURL = "/v1" }, []string{"BaseURL"}},
		{"base URL with credentials", func(c *models.Config) { c.BaseURL = "https://u:p@example.com/v1" }, []string{"BaseURL"}},
		{"bad env name", func(c *models.Config) { c.APIKeyEnv = "1KEY" }, []string{"APIKeyEnv"}},
		{"NaN price", func(c *models.Config) { c.InputPrice = math.NaN() }, []string{"InputPrice"}},
		{"negative price", func(c *models.Config) { c.OutputPrice = -1 }, []string{"OutputPrice"}},
		{"negative timeout", func(c *models.Config) { c.Timeout = -1 }, []string{"Timeout"}},
		{"too many retries", func(c *models.Config) { c.MaxRetries = 21 }, []string{"MaxRetries"}},
		{"several", func(c *models.Config) { *c = models.Config{MaxRetries: -1} }, []string{"Provider", "Model", "MaxRetries"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ok
			tt.edit(&cfg)
			err := models.Validate(cfg)
			var got []string
			if err != nil {
				for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
					var ce *models.ConfigError
					if !errors.As(e, &ce) {
						t.Fatalf("problem %v is not a *ConfigError", e)
					}
					got = append(got, ce.Field)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.fields, ",") {
				t.Errorf("Validate fields = %v, want %v (%v)", got, tt.fields, err)
			}
		})
	}
}

func TestCost(t *testing.T) {
	c := models.Config{InputPrice: 0.5, OutputPrice: 2}
	if got := c.Cost(models.Usage{InputTokens: 10, OutputTokens: 3}); got != 11 {
		t.Errorf("Cost = %v, want 11", got)
	}
	if got := (models.Config{}).Cost(models.Usage{InputTokens: 10}); got != 0 {
		t.Errorf("Cost at zero prices = %v, want 0", got)
	}
}

func TestError(t *testing.T) {
	e := &models.Error{Name: asl.ErrRateLimitExceeded, Status: 429, Provider: "openai", Model: "gpt", Message: "slow down", Err: context.Canceled}
	if got, want := e.Error(), "States.RateLimitExceeded: openai gpt: status 429: slow down"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, context.Canceled) {
		t.Error("errors.Is(e, context.Canceled) = false")
	}
	a := e.ASL()
	if a.Name != asl.ErrRateLimitExceeded || a.Cause != "openai gpt: status 429: slow down" || !errors.Is(a, e) {
		t.Errorf("ASL() = %+v", a)
	}
	bare := &models.Error{Name: asl.ErrAgentModelError, Provider: "fake"}
	if got := bare.Error(); got != "Agent.ModelError: fake" {
		t.Errorf("Error() = %q", got)
	}
}
