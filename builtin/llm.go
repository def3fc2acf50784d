package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/egress"
	"github.com/aslrun/aslrun/jsonvalue"
)

// DefaultBaseURL is the base URL an LLM agent uses when LLMConfig.BaseURL
// is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

const (
	// defaultMaxRetries is LLMConfig.MaxRetries when it is zero.
	defaultMaxRetries = 2
	// firstBackoff is the wait before the first retry; it doubles with each.
	firstBackoff = 500 * time.Millisecond
	// maxBackoff caps the doubling.
	maxBackoff = 30 * time.Second
	// maxRetryAfter is the longest Retry-After the agent waits for; a
	// longer one ends the retries (usually a quota, better left to the
	// state's Retry).
	maxRetryAfter = time.Minute
)

// LLMConfig configures an agent for an OpenAI-compatible chat-completions
// endpoint. Model is required; the zero value of every other field works.
// The agent keeps its own copy: changing the configuration afterwards
// does not change the agent.
type LLMConfig struct {
	// BaseURL is where the endpoint lives: the agent POSTs to
	// BaseURL + "/chat/completions". Default DefaultBaseURL; any
	// OpenAI-compatible server works (a local one like
	// "http://localhost:11434/v1" included).
	BaseURL string
	// Model is the model name sent with every request, like "gpt-4o-mini".
	Model string
	// APIKey is the key itself, sent as "Authorization: Bearer APIKey",
	// for Go callers that hold it (from a secret manager, say). Prefer
	// APIKeyEnv, which keeps the key out of configurations; give at most
	// one of them. With neither, no Authorization header is sent. An
	// agents file cannot give the key itself (see AgentsFile).
	APIKey string
	// APIKeyEnv names the environment variable holding the API key, read at
	// every call; a variable that is unset or empty fails the call with an
	// *UnsetEnvError naming it.
	APIKeyEnv string
	// System, when set, is sent first as the system message.
	System string
	// Temperature is sent when set; nil leaves it to the endpoint.
	Temperature *float64
	// MaxTokens is sent as max_tokens when positive; zero leaves it to the
	// endpoint.
	MaxTokens int
	// JSON asks the endpoint for a JSON object (response_format
	// {"type": "json_object"}) and decodes the answer strictly: the call's
	// result is the decoded value, and an answer that is not JSON fails
	// with Agent.InvalidOutput. Some endpoints want the word "JSON" in the
	// prompt when this is set. Without JSON the result is the answer's text.
	JSON bool
	// Timeout limits each request to the endpoint; a request over it counts
	// as a network error (retried, then Agent.ModelError). Zero means no
	// limit of its own (the state's TimeoutSeconds still applies to the
	// whole call).
	Timeout time.Duration
	// MaxRetries is how many times a request that got a 429, a 5xx or a
	// network error is sent again, after exponential backoff (0.5 s, 1 s,
	// 2 s, … with jitter, at most 30 s) or after the endpoint's Retry-After
	// when it gives one. Zero means 2; a negative value means none.
	MaxRetries int
	// InputCostPerMTok and OutputCostPerMTok are the prices of a million
	// prompt and completion tokens, used to report the call's cost. Zero
	// means the cost is not reported.
	InputCostPerMTok  float64
	OutputCostPerMTok float64
	// Hosts decides which hosts the agent may reach (BaseURL's and those
	// of the redirects it follows); nil means the default policy
	// (egress.Config's zero value): loopback, private and link-local
	// addresses refused unless listed, so a local server such as
	// http://localhost:11434/v1 must be listed. A refused host fails the
	// call with States.Permissions, without retries.
	Hosts *egress.Policy
	// HTTPClient, when set, sends the requests instead of the client of
	// Hosts, and Hosts is not applied: it is for Go programs that confine
	// their client themselves (egress.Policy.Client makes one).
	HTTPClient *http.Client
}

// llmAgent is the agent LLM returns. It is immutable after LLM.
type llmAgent struct {
	cfg        LLMConfig
	endpoint   string
	maxRetries int
	client     *http.Client
}

// LLM returns an agent that calls an OpenAI-compatible chat-completions
// endpoint (POST {BaseURL}/chat/completions) once per call, retrying as
// LLMConfig.MaxRetries says.
//
// The messages sent are the System message, if any, then:
//   - when the input is an object with "messages" (an array of objects
//     with a string "role", like {"role": "user", "content": "…"}), those
//     messages as given;
//   - when the input is an object with a string "prompt", that prompt as
//     the user message;
//   - when the input is a string, that string as the user message;
//   - otherwise the input's compact JSON as the user message.
//
// When the state runs again because governance refused what its previous
// attempt wrote (agents.Request.Violation), one more user message follows:
// "The workflow refused what your previous answer wrote: {detail}. Answer
// again so that your answer respects that rule.", the detail being the
// refusal as JSON (rule, path, old, new, reason), so the model can correct
// itself.
//
// The result is the answer's text, or with LLMConfig.JSON the decoded JSON
// value. The endpoint's usage (prompt_tokens, completion_tokens,
// total_tokens) is reported with agents.Request.ReportUsage, with the cost
// the prices give, as soon as the answer arrives (also when the answer then
// fails to decode: it was paid for).
//
// Failures: a host that LLMConfig.Hosts refuses (BaseURL's, or a
// redirect's) is States.Permissions, not retried; a 429 that persists
// after the retries is
// States.RateLimitExceeded; a 5xx or a network error that persists is
// Agent.ModelError; any other status is Agent.ModelError with the
// endpoint's error message (never the API key); an answer that is not JSON
// in JSON mode is Agent.InvalidOutput; malformed input messages are
// Agent.InvalidInput; a cancelled call returns the context's error. Retries
// stop early when the next one could not happen before the context's
// deadline. The agent uses no tools (no function calling). It is safe for
// concurrent use.
func LLM(cfg LLMConfig) (agents.Agent, error) {
	if err := checkLLM(&cfg); err != nil {
		return nil, fmt.Errorf("llm agent: %w", err)
	}
	if cfg.Temperature != nil {
		t := *cfg.Temperature // the caller may change its variable later
		cfg.Temperature = &t
	}
	a := &llmAgent{
		cfg:        cfg,
		endpoint:   strings.TrimRight(cfg.BaseURL, "/") + "/chat/completions",
		maxRetries: cfg.MaxRetries,
		client:     cfg.HTTPClient,
	}
	switch {
	case a.maxRetries == 0:
		a.maxRetries = defaultMaxRetries
	case a.maxRetries < 0:
		a.maxRetries = 0
	}
	if a.client == nil {
		a.client = policyClient(cfg.Hosts)
	}
	return a, nil
}

// checkLLM validates cfg and fills in the default BaseURL.
func checkLLM(cfg *LLMConfig) error {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if _, err := checkURL(cfg.BaseURL); err != nil {
		return fmt.Errorf("the BaseURL: %w", err)
	}
	switch {
	case cfg.Model == "":
		return errors.New("the Model is required")
	case cfg.APIKey != "" && cfg.APIKeyEnv != "":
		return errors.New("give APIKey or APIKeyEnv, not both")
	case cfg.APIKeyEnv != "" && !validEnvName(cfg.APIKeyEnv):
		return fmt.Errorf("the APIKeyEnv %q is not a variable name", cfg.APIKeyEnv)
	case cfg.Temperature != nil && !(*cfg.Temperature >= 0 && !math.IsInf(*cfg.Temperature, 1)):
		return fmt.Errorf("the Temperature %v is not a finite number ≥ 0", *cfg.Temperature)
	case cfg.MaxTokens < 0:
		return fmt.Errorf("the MaxTokens %d is negative", cfg.MaxTokens)
	case cfg.Timeout < 0:
		return fmt.Errorf("the Timeout %s is negative", cfg.Timeout)
	case !validPrice(cfg.InputCostPerMTok):
		return fmt.Errorf("the InputCostPerMTok %v is not a finite number ≥ 0", cfg.InputCostPerMTok)
	case !validPrice(cfg.OutputCostPerMTok):
		return fmt.Errorf("the OutputCostPerMTok %v is not a finite number ≥ 0", cfg.OutputCostPerMTok)
	}
	return nil
}

func validPrice(p float64) bool { return p >= 0 && !math.IsInf(p, 1) }

var _ agents.Agent = (*llmAgent)(nil)

// Invoke sends one chat completion and returns its answer.
func (a *llmAgent) Invoke(ctx context.Context, req *agents.Request) (any, error) {
	key, err := a.apiKey()
	if err != nil {
		return nil, fmt.Errorf("llm agent %s: %w", req.Agent, err)
	}
	msgs, err := a.messages(req)
	if err != nil {
		return nil, err
	}
	// The Task's Model block names the models to ask, in order (its
	// Fallback tried on its FallbackOn errors), at this agent's endpoint;
	// its Generation overrides the agent's settings field by field.
	names := []string{a.cfg.Model}
	if m := req.Model; m != nil && len(m.Models) > 0 {
		names = m.Models
	}
	var content string
	for i, model := range names {
		var usage *agents.Usage
		content, usage, err = a.ask(ctx, req, key, model, msgs)
		if usage != nil {
			req.ReportUsage(*usage)
		}
		if err == nil {
			break
		}
		var ae *asl.Error
		if i+1 < len(names) && errors.As(err, &ae) && req.Model.FallsBackOn(ae.Name) && ctx.Err() == nil {
			continue
		}
		return nil, err
	}
	if !a.cfg.JSON {
		return content, nil
	}
	v, err := jsonvalue.Decode([]byte(content))
	if err != nil {
		return nil, &asl.Error{Name: asl.ErrAgentInvalidOutput, Cause: fmt.Sprintf("the answer of model %s is not JSON: %v", a.cfg.Model, err), Err: err}
	}
	return v, nil
}

// ask sends one chat completion to model and returns its answer's text
// and usage (also with an error that came after the answer: it was paid
// for).
func (a *llmAgent) ask(ctx context.Context, req *agents.Request, key, model string, msgs []any) (string, *agents.Usage, error) {
	body := map[string]any{"model": model, "messages": msgs}
	if a.cfg.Temperature != nil {
		body["temperature"] = *a.cfg.Temperature
	}
	if a.cfg.MaxTokens > 0 {
		body["max_tokens"] = a.cfg.MaxTokens
	}
	if g := req.Generation; g != nil {
		if g.Temperature != nil {
			body["temperature"] = *g.Temperature
		}
		if g.TopP != nil {
			body["top_p"] = *g.TopP
		}
		if g.MaxTokens > 0 {
			body["max_tokens"] = g.MaxTokens
		}
		if len(g.StopSequences) > 0 {
			stop := make([]any, len(g.StopSequences))
			for i, q := range g.StopSequences {
				stop[i] = q
			}
			body["stop"] = stop
		}
	}
	if a.cfg.JSON {
		body["response_format"] = map[string]any{"type": "json_object"}
	}
	data, err := jsonvalue.Marshal(body)
	if err != nil {
		return "", nil, fmt.Errorf("llm agent %s: encode the request: %w", req.Agent, err)
	}
	resp, err := a.post(ctx, key, data)
	if err != nil {
		return "", nil, redact(err, key)
	}
	content, usage, err := a.completion(resp)
	if err != nil {
		return "", usage, redact(err, key)
	}
	return content, usage, nil
}

// apiKey returns the key to send, reading APIKeyEnv now.
func (a *llmAgent) apiKey() (string, error) {
	if a.cfg.APIKeyEnv == "" {
		return a.cfg.APIKey, nil
	}
	key, set := os.LookupEnv(a.cfg.APIKeyEnv)
	if key == "" {
		return "", fmt.Errorf("API key: %w", &UnsetEnvError{Name: a.cfg.APIKeyEnv, Empty: set})
	}
	return key, nil
}

// messages builds the request's messages from req (see LLM).
func (a *llmAgent) messages(req *agents.Request) ([]any, error) {
	var msgs []any
	if a.cfg.System != "" {
		msgs = append(msgs, message("system", a.cfg.System))
	}
	in, _ := req.Input.(map[string]any)
	if given, ok := in["messages"]; ok {
		list, isArr := given.([]any)
		if !isArr {
			return nil, asl.Errorf(asl.ErrAgentInvalidInput, "llm agent %s: input.messages must be an array of {role, content} objects, not %s", req.Agent, jsonvalue.TypeName(given))
		}
		for i, m := range list {
			obj, isObj := m.(map[string]any)
			role, _ := obj["role"].(string)
			if !isObj || role == "" {
				return nil, asl.Errorf(asl.ErrAgentInvalidInput, "llm agent %s: input.messages[%d] must be an object with a string role, like {\"role\": \"user\", \"content\": \"…\"}", req.Agent, i)
			}
		}
		msgs = append(msgs, list...)
	} else if prompt, ok := in["prompt"].(string); ok {
		msgs = append(msgs, message("user", prompt))
	} else if s, ok := req.Input.(string); ok {
		msgs = append(msgs, message("user", s))
	} else {
		data, err := jsonvalue.Marshal(req.Input)
		if err != nil {
			return nil, fmt.Errorf("llm agent %s: encode input: %w", req.Agent, err)
		}
		msgs = append(msgs, message("user", string(data)))
	}
	if req.Violation != nil {
		detail, err := jsonvalue.Marshal(req.Violation)
		if err != nil {
			return nil, fmt.Errorf("llm agent %s: encode the violation: %w", req.Agent, err)
		}
		msgs = append(msgs, message("user", "The workflow refused what your previous answer wrote: "+string(detail)+". Answer again so that your answer respects that rule."))
	}
	return msgs, nil
}

func message(role, content string) map[string]any {
	return map[string]any{"role": role, "content": content}
}

// post sends the request, retrying 429, 5xx and network errors, and
// returns the decoded response of the first 2xx answer.
func (a *llmAgent) post(ctx context.Context, key string, body []byte) (any, error) {
	for attempt := 0; ; attempt++ {
		status, header, data, err := a.send(ctx, key, body)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err == nil && status >= 200 && status <= 299 {
			v, derr := jsonvalue.Decode(data)
			if derr != nil {
				return nil, &asl.Error{Name: asl.ErrAgentModelError, Cause: fmt.Sprintf("POST %s: the response is not JSON: %v", a.endpoint, derr), Err: derr}
			}
			return v, nil
		}
		fail, retry := a.failure(status, data, err)
		wait, ok := retryDelay(attempt, header)
		if dl, has := ctx.Deadline(); has && time.Until(dl) < wait {
			ok = false // the retry could not happen in time
		}
		if !retry || !ok || attempt >= a.maxRetries {
			if attempt > 0 {
				fail.Cause += fmt.Sprintf(" (after %d attempts)", attempt+1)
			}
			return nil, fail
		}
		if err := sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// send makes one request.
func (a *llmAgent) send(ctx context.Context, key string, body []byte) (status int, header http.Header, data []byte, err error) {
	reqCtx := ctx
	if a.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		reqCtx, cancel = context.WithTimeout(ctx, a.cfg.Timeout)
		defer cancel()
	}
	hr, err := http.NewRequestWithContext(reqCtx, http.MethodPost, a.endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("User-Agent", "aslrun")
	if key != "" {
		hr.Header.Set("Authorization", "Bearer "+key)
	}
	status, header, data, err = roundTrip(a.client, hr)
	if err != nil && ctx.Err() == nil && reqCtx.Err() != nil {
		err = fmt.Errorf("no complete answer within %s (the agent's Timeout)", a.cfg.Timeout)
	}
	return status, header, data, err
}

// failure describes a failed request and whether it is worth repeating.
func (a *llmAgent) failure(status int, data []byte, err error) (fail *asl.Error, retry bool) {
	var de *egress.DeniedError
	switch {
	case errors.As(err, &de):
		return &asl.Error{Name: asl.ErrPermissions, Cause: fmt.Sprintf("POST %s: %v", a.endpoint, de), Err: err}, false
	case err != nil:
		return asl.Errorf(asl.ErrAgentModelError, "POST %s: %v", a.endpoint, err), true
	case status == http.StatusTooManyRequests:
		return asl.Errorf(asl.ErrRateLimitExceeded, "POST %s: %s%s", a.endpoint, statusText(status), endpointMessage(data)), true
	case status >= 500:
		return asl.Errorf(asl.ErrAgentModelError, "POST %s: %s%s", a.endpoint, statusText(status), endpointMessage(data)), true
	}
	return asl.Errorf(asl.ErrAgentModelError, "POST %s: %s%s", a.endpoint, statusText(status), endpointMessage(data)), false
}

// endpointMessage returns ": " and the error message of an error response
// ({"error": {"message": …}}, {"error": "…"}, {"message": "…"} or
// {"detail": "…"}), or the start of the body when it has none.
func endpointMessage(data []byte) string {
	v, err := jsonvalue.Decode(data)
	if err == nil {
		obj, _ := v.(map[string]any)
		e, _ := obj["error"].(map[string]any)
		for _, m := range []any{e["message"], obj["error"], obj["message"], obj["detail"]} {
			if s, ok := m.(string); ok && s != "" {
				return ": " + excerpt([]byte(s))
			}
		}
	}
	if x := excerpt(data); x != "" {
		return ": " + x
	}
	return ""
}

// retryDelay returns how long to wait before retry number attempt+1: the
// response's Retry-After (seconds or an HTTP date) when it has one, else
// exponential backoff with jitter. ok is false when Retry-After asks for
// more than maxRetryAfter.
func retryDelay(attempt int, header http.Header) (d time.Duration, ok bool) {
	if ra := header.Get("Retry-After"); ra != "" {
		if d, valid := parseRetryAfter(ra, time.Now()); valid {
			return d, d <= maxRetryAfter
		}
	}
	d = maxBackoff
	if attempt < 16 {
		d = min(firstBackoff<<attempt, maxBackoff)
	}
	// Full jitter over the upper half keeps clients that failed together
	// from retrying together.
	return d/2 + rand.N(d/2+1), true
}

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
		if secs < 0 || secs > int64(24*time.Hour/time.Second) {
			return 0, false
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// completion reads the answer and the usage of a chat-completion response.
func (a *llmAgent) completion(resp any) (string, *agents.Usage, error) {
	obj, _ := resp.(map[string]any)
	usage := a.usage(obj["usage"])
	choices, _ := obj["choices"].([]any)
	if len(choices) == 0 {
		return "", usage, asl.Errorf(asl.ErrAgentModelError, "POST %s: the response has no choices", a.endpoint)
	}
	choice, _ := choices[0].(map[string]any)
	msg, _ := choice["message"].(map[string]any)
	if refusal, ok := msg["refusal"].(string); ok && refusal != "" {
		return "", usage, asl.Errorf(asl.ErrAgentModelError, "model %s refused: %s", a.cfg.Model, excerpt([]byte(refusal)))
	}
	content, ok := msg["content"].(string)
	if !ok {
		return "", usage, asl.Errorf(asl.ErrAgentModelError, "POST %s: the response's choices[0].message.content is %s, not a string", a.endpoint, jsonvalue.TypeName(msg["content"]))
	}
	return content, usage, nil
}

// usage reads the response's usage object, or returns nil when there is
// none.
func (a *llmAgent) usage(v any) *agents.Usage {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	count := func(k string) int64 {
		n, _ := obj[k].(json.Number)
		i, ok := jsonvalue.Int64(n)
		if !ok || i < 0 {
			return 0
		}
		return i
	}
	u := &agents.Usage{InputTokens: count("prompt_tokens"), OutputTokens: count("completion_tokens"), Tokens: count("total_tokens")}
	if u.Tokens == u.InputTokens+u.OutputTokens {
		u.Tokens = 0 // the total adds nothing
	}
	u.Cost = (float64(u.InputTokens)*a.cfg.InputCostPerMTok + float64(u.OutputTokens)*a.cfg.OutputCostPerMTok) / 1e6
	if *u == (agents.Usage{}) {
		return nil
	}
	return u
}

// redact removes the API key from an error's message.
func redact(err error, key string) error {
	if key == "" || !strings.Contains(err.Error(), key) {
		return err
	}
	var ae *asl.Error
	if errors.As(err, &ae) {
		return &asl.Error{Name: ae.Name, Cause: strings.ReplaceAll(ae.Cause, key, "[redacted]")}
	}
	return errors.New(strings.ReplaceAll(err.Error(), key, "[redacted]"))
}

// sleep waits d, or returns ctx's error when ctx is done first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
