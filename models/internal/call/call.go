// Package call holds what the providers of package models share around one
// Send: the API key, the errors they return (bounded, without the key), and
// the retry loop with its backoff and Retry-After rule.
package call

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/models"
)

const (
	// DefaultTimeout is Config.Timeout when it is zero.
	DefaultTimeout = 10 * time.Minute
	// firstBackoff is the wait before the first retry; it doubles with each.
	firstBackoff = 500 * time.Millisecond
	// maxBackoff caps the doubling.
	maxBackoff = 30 * time.Second
	// MaxRetryAfter is the longest Retry-After a Send waits for; a longer
	// one ends the retries (usually a quota, better left to the state's
	// Retry).
	MaxRetryAfter = time.Minute
	// maxMessage bounds models.Error.Message.
	maxMessage = 1024
)

// Target is the configured model one Send talks to.
type Target struct {
	// Provider is "openai" or "anthropic".
	Provider string
	Config   models.Config
}

// Key returns the API key: the value of the variable Config.APIKeyEnv names,
// or "" when it names none.
func (t Target) Key() (string, *models.Error) {
	if t.Config.APIKeyEnv == "" {
		return "", nil
	}
	key := os.Getenv(t.Config.APIKeyEnv)
	if key == "" {
		return "", t.Error(asl.ErrAgentModelError, 0, "the API key variable "+t.Config.APIKeyEnv+" is unset or empty", "")
	}
	return key, nil
}

// Error returns a failure named name, with msg bounded to 1 KiB and every
// occurrence of key in it replaced.
func (t Target) Error(name asl.ErrorName, status int, msg, key string) *models.Error {
	return &models.Error{
		Name:     name,
		Status:   status,
		Provider: t.Provider,
		Model:    t.Config.Model,
		Message:  Clean(msg, key),
	}
}

// Clean removes key from msg, trims it and bounds it to 1 KiB (cut at a
// rune boundary, ending with "…").
func Clean(msg, key string) string {
	if len(key) >= 4 {
		msg = strings.ReplaceAll(msg, key, "[redacted]")
	}
	msg = strings.TrimSpace(strings.ToValidUTF8(msg, "\uFFFD"))
	if len(msg) <= maxMessage {
		return msg
	}
	cut := maxMessage - len("…")
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}

// Failure is a failed attempt.
type Failure struct {
	Err *models.Error
	// Retry says whether the attempt may be tried again.
	Retry bool
	// Header is the response's header, for its Retry-After; nil when
	// there was no response.
	Header http.Header
}

// Status returns the failure of an attempt that got an error status: a 429
// is asl.ErrRateLimitExceeded, anything else asl.ErrAgentModelError (the
// provider changes the name afterwards for what it recognises, such as a
// context overflow); 429 and 5xx may be retried.
func (t Target) Status(status int, header http.Header, msg, key string) *Failure {
	name := asl.ErrAgentModelError
	if status == http.StatusTooManyRequests {
		name = asl.ErrRateLimitExceeded
	}
	e := t.Error(name, status, msg, key)
	if d, ok := RetryAfter(header, time.Now()); ok {
		e.RetryAfter = d
	}
	return &Failure{Err: e, Retry: status == http.StatusTooManyRequests || status >= 500, Header: header}
}

// Transport returns the failure of an attempt that got no usable answer
// (err is not an API error): an attempt over its own timeout is
// asl.ErrTimeout, anything else a network failure (asl.ErrAgentModelError);
// both may be retried.
func (t Target) Transport(attempt context.Context, err error, key string) *Failure {
	if errors.Is(attempt.Err(), context.DeadlineExceeded) {
		e := t.Error(asl.ErrTimeout, 0, fmt.Sprintf("no answer within the timeout of %s", t.timeout()), key)
		e.Err = context.DeadlineExceeded
		return &Failure{Err: e, Retry: true}
	}
	return &Failure{Err: t.Error(asl.ErrAgentModelError, 0, err.Error(), key), Retry: true}
}

// Done returns the failure of a Send whose context is done: asl.ErrTimeout
// for a deadline, asl.ErrAgentModelError for a cancellation, wrapping the
// context's error.
func (t Target) Done(ctx context.Context) *models.Error {
	name, msg := asl.ErrAgentModelError, "canceled"
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		name, msg = asl.ErrTimeout, "deadline exceeded"
	}
	e := t.Error(name, 0, msg, "")
	e.Err = ctx.Err()
	return e
}

func (t Target) timeout() time.Duration {
	if t.Config.Timeout > 0 {
		return t.Config.Timeout
	}
	return DefaultTimeout
}

// Do runs attempt, each time under Config.Timeout, until it succeeds, fails
// without Retry, or Config.MaxRetries retries are spent. Between attempts it
// waits the failure's Retry-After, or backs off exponentially with jitter
// when there is none; a Retry-After over MaxRetryAfter ends the retries.
// When ctx is done Do returns Done's failure at once.
func (t Target) Do(ctx context.Context, attempt func(ctx context.Context) *Failure) error {
	for n := 0; ; n++ {
		actx, cancel := context.WithTimeout(ctx, t.timeout())
		f := attempt(actx)
		cancel()
		if f == nil {
			return nil
		}
		if ctx.Err() != nil {
			return t.Done(ctx)
		}
		if !f.Retry || n >= t.Config.MaxRetries {
			return f.Err
		}
		wait, ok := Delay(n, f.Header)
		if !ok {
			return f.Err
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return t.Done(ctx)
		case <-timer.C:
		}
	}
}

// Delay returns how long to wait before retry number n+1: the header's
// Retry-After when it has one, else exponential backoff with jitter. ok is
// false when Retry-After asks for more than MaxRetryAfter.
func Delay(n int, header http.Header) (d time.Duration, ok bool) {
	if d, given := RetryAfter(header, time.Now()); given {
		return d, d <= MaxRetryAfter
	}
	d = maxBackoff
	if n < 16 {
		d = min(firstBackoff<<n, maxBackoff)
	}
	// Jitter over the upper half keeps clients that failed together from
	// retrying together.
	return d/2 + rand.N(d/2+1), true
}

// RetryAfter reads the wait a response asks for: OpenAI's retry-after-ms
// (milliseconds), or Retry-After in seconds or as an HTTP date. given is
// false when neither holds a valid value.
func RetryAfter(header http.Header, now time.Time) (d time.Duration, given bool) {
	if header == nil {
		return 0, false
	}
	if v := strings.TrimSpace(header.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms <= float64(24*time.Hour/time.Millisecond) {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(header.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 || secs > int64(24*time.Hour/time.Second) {
			return 0, false
		}
		return time.Duration(secs) * time.Second, true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d = max(at.Sub(now), 0)
	if d > 24*time.Hour {
		return 0, false
	}
	return d, true
}
