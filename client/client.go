// Package client is a Go client of aslrun's HTTP API (see package api):
// the one the aslrun command line uses when a server holds its database,
// and the one to embed in programs that drive a server.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/aslrun/aslrun/api"
)

// Client calls one server. It is safe for concurrent use.
type Client struct {
	base  string
	token string
	hc    *http.Client
}

// New returns a client of the server at baseURL ("https://host:8080"),
// authenticating with token (none when empty). hc nil means a client with
// a 60 s timeout.
func New(baseURL, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	return &Client{base: baseURL, token: token, hc: hc}
}

// NewUnix returns a client of the server listening on the unix socket at
// path, where its peer is the local admin: no token is needed. The caller
// checks first that the socket is one to trust (its owner).
func NewUnix(path string) *Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	return New("http://aslrun", "", &http.Client{Transport: tr, Timeout: 60 * time.Second})
}

// Error is a problem the server answered with.
type Error struct {
	Status  int
	Problem api.Problem
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("server: %d %s", e.Status, e.Problem.Title)
	if e.Problem.Detail != "" {
		msg += ": " + e.Problem.Detail
	}
	for _, fe := range e.Problem.Errors {
		if fe.Detail != e.Problem.Detail {
			msg += fmt.Sprintf("\n%s: %s", fe.Pointer, fe.Detail)
		}
	}
	return msg
}

// StatusOf returns the HTTP status of a problem error, 0 for others.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// do sends a request with a JSON body (when not nil) and decodes a JSON
// answer into out (when not nil).
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	_, err := c.send(ctx, c.hc, method, path, body, out)
	return err
}

// send is do through hc, returning the answer's status (a 204 leaves out
// as it is).
func (c *Client) send(ctx context.Context, hc *http.Client, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode >= 300 {
		e := &Error{Status: resp.StatusCode}
		if json.Unmarshal(data, &e.Problem) != nil || e.Problem.Title == "" {
			e.Problem.Title = http.StatusText(resp.StatusCode)
			e.Problem.Detail = string(bytes.TrimSpace(data))
		}
		return resp.StatusCode, e
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return resp.StatusCode, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return resp.StatusCode, fmt.Errorf("server: %s %s: the answer is not what the API says: %w", method, path, err)
	}
	return resp.StatusCode, nil
}

// Start starts an execution.
func (c *Client) Start(ctx context.Context, req api.StartExecution) (api.Execution, error) {
	var e api.Execution
	err := c.do(ctx, "POST", "/v1/executions", req, &e)
	return e, err
}

// Execution describes an execution.
func (c *Client) Execution(ctx context.Context, id string) (api.Execution, error) {
	var e api.Execution
	err := c.do(ctx, "GET", "/v1/executions/"+url.PathEscape(id), nil, &e)
	return e, err
}

// Executions lists executions, newest first: status "" for all, limit 0
// for the server's default page.
func (c *Client) Executions(ctx context.Context, status string, limit int) (api.ExecutionList, error) {
	q := url.Values{}
	if status != "" {
		q.Set("status", status)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var l api.ExecutionList
	err := c.do(ctx, "GET", "/v1/executions?"+q.Encode(), nil, &l)
	return l, err
}

// History returns an execution's whole history, page after page; verify
// asks the server to check the hash chain first.
func (c *Client) History(ctx context.Context, id string, verify bool) ([]api.Event, error) {
	var all []api.Event
	after := ""
	for {
		q := url.Values{"limit": {"1000"}}
		if verify {
			q.Set("verify", "true")
		}
		if after != "" {
			q.Set("after", after)
		}
		var h api.History
		if err := c.do(ctx, "GET", "/v1/executions/"+url.PathEscape(id)+"/history?"+q.Encode(), nil, &h); err != nil {
			return nil, err
		}
		all = append(all, h.Events...)
		if h.Next == "" {
			return all, nil
		}
		after, verify = h.Next, false
	}
}

// Resume continues an execution in the background.
func (c *Client) Resume(ctx context.Context, id string) (api.Execution, error) {
	var e api.Execution
	err := c.do(ctx, "POST", "/v1/executions/"+url.PathEscape(id)+"/resume", nil, &e)
	return e, err
}

// Approvals lists the pending approvals, of one execution when execution
// is not empty.
func (c *Client) Approvals(ctx context.Context, execution string) ([]api.Approval, error) {
	q := url.Values{}
	if execution != "" {
		q.Set("execution", execution)
	}
	var l api.ApprovalList
	err := c.do(ctx, "GET", "/v1/approvals?"+q.Encode(), nil, &l)
	return l.Approvals, err
}

// Decide decides a pending approval (its API id); the execution goes on
// in the background.
func (c *Client) Decide(ctx context.Context, approval string, d api.Decision) (api.Execution, error) {
	var e api.Execution
	err := c.do(ctx, "POST", "/v1/approvals/"+url.PathEscape(approval)+"/decision", d, &e)
	return e, err
}

// Check is a dry run of a decision.
func (c *Client) Check(ctx context.Context, approval string, d api.Decision) (api.Check, error) {
	var out api.Check
	err := c.do(ctx, "POST", "/v1/approvals/"+url.PathEscape(approval)+"/check", d, &out)
	return out, err
}

// Validate validates a definition.
func (c *Client) Validate(ctx context.Context, definition []byte) (api.Validation, error) {
	var v api.Validation
	err := c.do(ctx, "POST", "/v1/workflows/validate", api.Validate{Definition: definition}, &v)
	return v, err
}

// Wait polls an execution until it is no longer RUNNING (it ended, or it
// waits for a timer or a decision) or ctx ends.
func (c *Client) Wait(ctx context.Context, id string, every time.Duration) (api.Execution, error) {
	for {
		e, err := c.Execution(ctx, id)
		if err != nil || e.Status != "RUNNING" {
			return e, err
		}
		select {
		case <-ctx.Done():
			return e, ctx.Err()
		case <-time.After(every):
		}
	}
}

// SendTaskSuccess answers a task token with the Task's result; the
// execution goes on in the background.
func (c *Client) SendTaskSuccess(ctx context.Context, req api.TaskSuccess) (api.Execution, error) {
	var e api.Execution
	err := c.do(ctx, "POST", "/v1/task-tokens/success", req, &e)
	return e, err
}

// SendTaskFailure answers a task token with a failure; the execution goes
// on in the background.
func (c *Client) SendTaskFailure(ctx context.Context, req api.TaskFailure) (api.Execution, error) {
	var e api.Execution
	err := c.do(ctx, "POST", "/v1/task-tokens/failure", req, &e)
	return e, err
}

// SendTaskHeartbeat restarts the HeartbeatSeconds of the Task waiting for
// a token.
func (c *Client) SendTaskHeartbeat(ctx context.Context, token string) error {
	return c.do(ctx, "POST", "/v1/task-tokens/heartbeat", api.TaskHeartbeat{Token: token}, nil)
}

// MaxPollWait is the longest wait of PollActivity, as the server allows.
const MaxPollWait = 60 * time.Second

// PollActivity long-polls for the next task of activity name (the NAME of
// arn:aws:states:REGION:ACCOUNT:activity:NAME) as worker (its workerName),
// waiting up to wait (0 to MaxPollWait): the task, now this worker's, and
// true; false when none came in time or the server stopped. The worker
// then answers its TaskToken with SendTaskSuccess or SendTaskFailure,
// sending SendTaskHeartbeat meanwhile when the Task has HeartbeatSeconds.
// The request may outlast the client's timeout: it is given wait more.
func (c *Client) PollActivity(ctx context.Context, name, worker string, wait time.Duration) (api.ActivityTask, bool, error) {
	var task api.ActivityTask
	if wait < 0 || wait > MaxPollWait {
		return task, false, fmt.Errorf("poll activity %s: wait %v is not from 0 to %v", name, wait, MaxPollWait)
	}
	hc := c.hc
	if hc.Timeout != 0 {
		longer := *hc
		longer.Timeout += wait
		hc = &longer
	}
	path := "/v1/activities/" + url.PathEscape(name) + "/poll?wait=" + strconv.Itoa(int(wait/time.Second))
	status, err := c.send(ctx, hc, "POST", path, api.ActivityPoll{WorkerName: worker}, &task)
	if err != nil {
		return task, false, err
	}
	return task, status == http.StatusOK, nil
}

// Activities lists the activities with tasks in waiting executions, with
// how many wait for a worker and how many workers hold.
func (c *Client) Activities(ctx context.Context) ([]api.Activity, error) {
	var list api.ActivityList
	err := c.do(ctx, "GET", "/v1/activities", nil, &list)
	return list.Activities, err
}

// Checkpoints lists an execution's checkpoints, oldest first, without
// their documents.
func (c *Client) Checkpoints(ctx context.Context, id string) (api.CheckpointList, error) {
	var l api.CheckpointList
	err := c.do(ctx, "GET", "/v1/executions/"+url.PathEscape(id)+"/checkpoints", nil, &l)
	return l, err
}

// Rollback moves an execution back to one of its checkpoints, in place
// (req.Restore: "both", "document" or "memory"); it goes on in the
// background. The answer is the execution as it stood once the rollback
// was recorded.
func (c *Client) Rollback(ctx context.Context, id string, req api.Rollback) (api.Execution, error) {
	var e api.Execution
	err := c.do(ctx, "POST", "/v1/executions/"+url.PathEscape(id)+"/rollback", req, &e)
	return e, err
}

// Fork starts a new execution from a checkpoint of execution id (named
// req.Name, or a new UUIDv7); it runs in the background. The answer is
// the new execution, once it exists.
func (c *Client) Fork(ctx context.Context, id string, req api.Fork) (api.Execution, error) {
	var e api.Execution
	err := c.do(ctx, "POST", "/v1/executions/"+url.PathEscape(id)+"/fork", req, &e)
	return e, err
}

// MemoryNamespaces lists the agent memory namespaces that have live
// entries, by name.
func (c *Client) MemoryNamespaces(ctx context.Context) ([]api.MemoryNamespace, error) {
	var l api.MemoryNamespaceList
	err := c.do(ctx, "GET", "/v1/memory", nil, &l)
	return l.Namespaces, err
}

// Memory lists the live entries of an agent memory namespace, by key (an
// unknown namespace has none).
func (c *Client) Memory(ctx context.Context, namespace string) ([]api.MemoryEntry, error) {
	var l api.MemoryEntryList
	err := c.do(ctx, "GET", "/v1/memory/"+url.PathEscape(namespace), nil, &l)
	return l.Entries, err
}
