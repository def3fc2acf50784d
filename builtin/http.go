package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/egress"
	"github.com/aslrun/aslrun/jsonvalue"
)

// maxBody is the largest response body or command output an agent reads;
// a larger one fails the call (the engine refuses results over 256 KiB
// anyway).
const maxBody = 16 << 20

// excerptLen is how much of an unexpected body an error's cause quotes.
const excerptLen = 200

// HTTPConfig configures an agent that POSTs its input to a URL. URL is
// required; the zero value of every other field works.
// The agent keeps its own copy: changing the configuration afterwards
// does not change the agent.
type HTTPConfig struct {
	// URL is the absolute http or https URL the input is POSTed to.
	URL string
	// Headers are added to every request. `${VAR}` in a value is replaced
	// by the environment variable VAR at call time (an unset variable fails
	// the call), so a token need not be written in a configuration:
	// {"Authorization": "Bearer ${HOOK_TOKEN}"}. They may replace the
	// default Content-Type, Accept and User-Agent, not Idempotency-Key.
	Headers map[string]string
	// Timeout limits each call, reading the response included; a call over
	// it fails with States.Timeout. Zero means no limit of its own (the
	// state's TimeoutSeconds still applies).
	Timeout time.Duration
	// Hosts decides which hosts the agent may reach, the URL's and those
	// of the redirects it follows; nil means the default policy
	// (egress.Config's zero value): loopback, private and link-local
	// addresses refused unless listed, public ones allowed. A refused
	// host fails the call with States.Permissions.
	Hosts *egress.Policy
	// HTTPClient, when set, sends the requests instead of the client of
	// Hosts, and Hosts is not applied: it is for Go programs that confine
	// their client themselves (egress.Policy.Client makes one).
	HTTPClient *http.Client
}

// httpAgent is the agent HTTP returns.
type httpAgent struct {
	cfg    HTTPConfig
	target string // the URL without its query, for error messages
	client *http.Client
}

// HTTP returns an agent that POSTs the request's input as JSON to cfg.URL
// and returns the response body decoded strictly (an empty body is null; a
// body that is not JSON is Agent.InvalidOutput). Each request carries the
// Idempotency-Key header (agents.Request.IdempotencyKey), so a receiver can
// recognize a call repeated after a crash.
//
// The request, and every redirect it follows, reaches only the hosts
// cfg.Hosts allows; a refused one fails the call with States.Permissions
// naming the host, its address and how to allow it. A 429 response fails
// the call with States.RateLimitExceeded. Any other
// status outside 2xx fails it with the error the body names when it is
// {"Error": "...", "Cause": "..."} (so a service can raise Agent.ModelError
// or its own names), and otherwise with States.TaskFailed quoting the
// status and the start of the body. The agent does not retry: a state's
// Retry does, with a new attempt and so a new idempotency key. The agent is
// safe for concurrent use.
func HTTP(cfg HTTPConfig) (agents.Agent, error) {
	target, err := checkURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("http agent: URL: %w", err)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Headers)) {
		if err := checkHeader(name, cfg.Headers[name]); err != nil {
			return nil, fmt.Errorf("http agent: header %s: %w", name, err)
		}
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("http agent: Timeout %s is negative", cfg.Timeout)
	}
	cfg.Headers = maps.Clone(cfg.Headers) // the caller may change its map later
	a := &httpAgent{cfg: cfg, target: target, client: cfg.HTTPClient}
	if a.client == nil {
		a.client = policyClient(cfg.Hosts)
	}
	return a, nil
}

// policyClient returns the client of hosts, or of the default policy
// when hosts is nil.
func policyClient(hosts *egress.Policy) *http.Client {
	if hosts == nil {
		hosts = &egress.Policy{}
	}
	return hosts.Client()
}

// denied returns the States.Permissions error of a request the host
// policy refused, or nil when err is no refusal.
func denied(method, target string, err error) error {
	var de *egress.DeniedError
	if !errors.As(err, &de) {
		return nil
	}
	return &asl.Error{Name: asl.ErrPermissions, Cause: fmt.Sprintf("%s %s: %v", method, target, de), Err: err}
}

var _ agents.Agent = (*httpAgent)(nil)

// Invoke POSTs req.Input and returns the decoded response.
func (a *httpAgent) Invoke(ctx context.Context, req *agents.Request) (any, error) {
	body, err := jsonvalue.Marshal(req.Input)
	if err != nil {
		return nil, fmt.Errorf("http agent %s: encode input: %w", req.Agent, err)
	}
	callCtx := ctx
	if a.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, a.cfg.Timeout)
		defer cancel()
	}
	hr, err := http.NewRequestWithContext(callCtx, http.MethodPost, a.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("http agent %s: %w", req.Agent, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("User-Agent", "aslrun")
	for _, name := range slices.Sorted(maps.Keys(a.cfg.Headers)) {
		v, err := expand(a.cfg.Headers[name], os.LookupEnv)
		if err != nil {
			return nil, fmt.Errorf("http agent %s: header %s: %w", req.Agent, name, err)
		}
		if !validHeaderValue(v) {
			return nil, fmt.Errorf("http agent %s: header %s: the expanded value holds a control character", req.Agent, name)
		}
		hr.Header.Set(name, v)
	}
	hr.Header.Set("Idempotency-Key", req.IdempotencyKey())

	client, done, err := clientFor(ctx, a.client, a.cfg.Hosts, a.cfg.HTTPClient != nil)
	if err != nil {
		return nil, err
	}
	defer done()
	client = guardRedirects(client, slices.Collect(maps.Keys(a.cfg.Headers)), nil)
	status, header, data, err := roundTrip(client, hr)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if callCtx.Err() != nil {
		return nil, asl.Errorf(asl.ErrTimeout, "POST %s: no complete answer within %s (the agent's Timeout)", a.target, a.cfg.Timeout)
	}
	if e := denied("POST", a.target, err); e != nil {
		return nil, e
	}
	if err != nil {
		return nil, fmt.Errorf("POST %s: %w", a.target, err)
	}
	switch {
	case status == http.StatusTooManyRequests:
		cause := fmt.Sprintf("POST %s: %s", a.target, statusText(status))
		if ra := header.Get("Retry-After"); ra != "" {
			cause += fmt.Sprintf(" (Retry-After: %s)", excerpt([]byte(ra)))
		}
		return nil, &asl.Error{Name: asl.ErrRateLimitExceeded, Cause: cause}
	case status < 200 || status > 299:
		if e := errorObject(data); e != nil {
			return nil, e
		}
		cause := fmt.Sprintf("POST %s: %s", a.target, statusText(status))
		if x := excerpt(data); x != "" {
			cause += ": " + x
		}
		return nil, &asl.Error{Name: asl.ErrTaskFailed, Cause: cause}
	}
	return decodeResult(data, "the response of POST "+a.target)
}

// roundTrip sends hr and reads the whole response body, up to maxBody.
func roundTrip(c *http.Client, hr *http.Request) (status int, header http.Header, body []byte, err error) {
	resp, err := c.Do(hr)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("read the response: %w", err)
	}
	if len(body) > maxBody {
		return 0, nil, nil, fmt.Errorf("the response is larger than %d bytes", maxBody)
	}
	return resp.StatusCode, resp.Header, body, nil
}

// decodeResult decodes an agent's JSON answer strictly: empty (or only
// white space) is null, anything but one JSON value is Agent.InvalidOutput
// with the offset of the problem.
func decodeResult(data []byte, what string) (any, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	v, err := jsonvalue.Decode(data)
	if err != nil {
		return nil, &asl.Error{Name: asl.ErrAgentInvalidOutput, Cause: fmt.Sprintf("%s is not JSON: %v", what, err), Err: err}
	}
	return v, nil
}

// errorObject returns the error data names when it is a JSON object with
// a non-empty string "Error" and, optionally, a string "Cause" (other
// members are ignored); otherwise nil.
func errorObject(data []byte) *asl.Error {
	v, err := jsonvalue.Decode(data)
	if err != nil {
		return nil
	}
	obj, _ := v.(map[string]any)
	name, _ := obj["Error"].(string)
	if name == "" {
		return nil
	}
	e := &asl.Error{Name: asl.ErrorName(name)}
	if c, ok := obj["Cause"]; ok {
		s, isStr := c.(string)
		if !isStr {
			return nil
		}
		e.Cause = s
	}
	return e
}

// excerpt returns the start of data for an error message: at most
// excerptLen bytes, cut on a character boundary, invalid UTF-8 replaced and
// runs of white space folded to one space.
func excerpt(data []byte) string {
	cut := len(data) > excerptLen
	if cut {
		data = data[:excerptLen]
		// Drop a character the cut split.
		for i := 0; i < utf8.UTFMax-1 && len(data) > 0; i++ {
			if r, size := utf8.DecodeLastRune(data); r != utf8.RuneError || size != 1 {
				break
			}
			data = data[:len(data)-1]
		}
	}
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(data), "\uFFFD")), " ")
	if cut {
		s += "…"
	}
	return s
}

func statusText(status int) string {
	if t := http.StatusText(status); t != "" {
		return fmt.Sprintf("%d %s", status, t)
	}
	return fmt.Sprintf("status %d", status)
}

// checkURL checks that s is an absolute http or https URL and returns it
// without its query and fragment, for error messages.
func checkURL(s string) (string, error) {
	if s == "" {
		return "", errors.New("missing")
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%q is not an http or https URL", s)
	}
	if u.Host == "" {
		return "", fmt.Errorf("%q has no host", s)
	}
	u.RawQuery, u.Fragment, u.RawFragment = "", "", ""
	return u.Redacted(), nil
}

// checkHeader checks a header's name and the ${VAR} syntax of its value.
func checkHeader(name, value string) error {
	if !validHeaderName(name) {
		return fmt.Errorf("%q is not a valid header name", name)
	}
	if strings.EqualFold(name, "Idempotency-Key") {
		return errors.New("the agent sets Idempotency-Key itself, to the call's idempotency key")
	}
	if !validHeaderValue(value) {
		return errors.New("the value holds a control character")
	}
	return checkTemplate(value)
}

// validHeaderName reports whether name is an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue reports whether v holds no control character but tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
