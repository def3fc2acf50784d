package models

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	asl "github.com/aslrun/aslrun"
)

// Error is every failure a Model returns.
type Error struct {
	// Name is the ASL error the failure raises: asl.ErrRateLimitExceeded
	// for a 429, asl.ErrTimeout for a deadline, asl.ErrAgentContextOverflow
	// when the provider says the conversation is too long for the model,
	// asl.ErrAgentInvalidOutput for tool-call arguments that are not a JSON
	// object, and asl.ErrAgentModelError for everything else (a 5xx, another
	// error status, a malformed answer, a refusal, a missing API key).
	Name asl.ErrorName
	// Status is the HTTP status, 0 when there was none.
	Status int
	// RetryAfter is the wait the provider asked for in its Retry-After
	// header, 0 when it gave none.
	RetryAfter time.Duration
	// Provider is "openai", "anthropic" or "fake".
	Provider string
	// Model is the configured model.
	Model string
	// Message is the provider's message or what went wrong, at most 1 KiB
	// and never holding the API key.
	Message string
	// Err is the underlying error when there is one worth matching with
	// errors.Is, such as context.Canceled; it is not part of Error().
	Err error
}

// Error returns "Name: provider model: status N: message".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Name))
	b.WriteString(": ")
	b.WriteString(e.Provider)
	if e.Model != "" {
		b.WriteString(" ")
		b.WriteString(e.Model)
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, ": status %d", e.Status)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// ASL returns the failure as the *asl.Error an agent raises: e's Name, with
// e's text as the cause and e as the underlying error.
func (e *Error) ASL() *asl.Error {
	return &asl.Error{Name: e.Name, Cause: strings.TrimPrefix(e.Error(), string(e.Name)+": "), Err: e}
}

// ConfigError is one problem of a Config: the field it is in and what is
// wrong with it.
type ConfigError struct {
	Field string
	Msg   string
}

// Error returns "model config: Field: Msg".
func (e *ConfigError) Error() string { return "model config: " + e.Field + ": " + e.Msg }

// Validate checks cfg and returns every problem it finds, each a
// *ConfigError naming its field (joined with errors.Join), or nil.
func Validate(cfg Config) error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	switch cfg.Provider {
	case "openai", "anthropic":
	case "":
		bad("Provider", `is required ("openai" or "anthropic")`)
	default:
		bad("Provider", `%q is not a provider ("openai" or "anthropic")`, cfg.Provider)
	}
	if strings.TrimSpace(cfg.Model) == "" {
		bad("Model", "is required")
	}
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		switch {
		case err != nil:
			bad("BaseURL", "%q is not a URL", cfg.BaseURL)
		case u.Scheme != "http" && u.Scheme != "https":
			bad("BaseURL", "%q is not an http or https URL", cfg.BaseURL)
		case u.Host == "":
			bad("BaseURL", "%q has no host", cfg.BaseURL)
		case u.User != nil:
			bad("BaseURL", "holds credentials: give the key in the variable APIKeyEnv names")
		}
	}
	if cfg.APIKeyEnv != "" && !envName(cfg.APIKeyEnv) {
		bad("APIKeyEnv", "%q is not an environment variable name", cfg.APIKeyEnv)
	}
	if !price(cfg.InputPrice) {
		bad("InputPrice", "%v is not a finite number ≥ 0", cfg.InputPrice)
	}
	if !price(cfg.OutputPrice) {
		bad("OutputPrice", "%v is not a finite number ≥ 0", cfg.OutputPrice)
	}
	if cfg.Timeout < 0 {
		bad("Timeout", "%s is negative", cfg.Timeout)
	}
	if cfg.MaxRetries < 0 || cfg.MaxRetries > 20 {
		bad("MaxRetries", "%d is not between 0 and 20", cfg.MaxRetries)
	}
	return errors.Join(errs...)
}

func price(p float64) bool { return p >= 0 && !math.IsInf(p, 1) }

// envName reports whether s is a portable environment variable name.
func envName(s string) bool {
	for i, c := range s {
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}
