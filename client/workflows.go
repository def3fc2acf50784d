package client

import (
	"context"
	"net/url"

	"github.com/aslrun/aslrun/api"
)

// RegisterWorkflow registers a definition as the next version of a
// workflow, with its optional label and lock (admin); the latest version
// when it is the same.
func (c *Client) RegisterWorkflow(ctx context.Context, req api.RegisterWorkflow) (api.Workflow, error) {
	var w api.Workflow
	err := c.do(ctx, "POST", "/v1/workflows", req, &w)
	return w, err
}

// Workflow returns the version of a workflow that ref names (a number,
// an alias, a semver label or constraint; "" for the latest), with its
// definition and aliases.
func (c *Client) Workflow(ctx context.Context, name, ref string) (api.Workflow, error) {
	path := "/v1/workflows/" + url.PathEscape(name)
	if ref != "" {
		path += "?version=" + url.QueryEscape(ref)
	}
	var w api.Workflow
	err := c.do(ctx, "GET", path, nil, &w)
	return w, err
}

// WorkflowVersions returns every version of a workflow, oldest first,
// with their labels, locks and aliases.
func (c *Client) WorkflowVersions(ctx context.Context, name string) ([]api.Workflow, error) {
	var l api.WorkflowList
	err := c.do(ctx, "GET", "/v1/workflows/"+url.PathEscape(name)+"/versions", nil, &l)
	return l.Workflows, err
}

// WorkflowAliases returns the aliases of a workflow, by alias.
func (c *Client) WorkflowAliases(ctx context.Context, name string) ([]api.WorkflowAlias, error) {
	var l api.AliasList
	err := c.do(ctx, "GET", "/v1/workflows/"+url.PathEscape(name)+"/aliases", nil, &l)
	return l.Aliases, err
}

// SetWorkflowAlias makes an alias of a workflow or moves it to version
// (admin).
func (c *Client) SetWorkflowAlias(ctx context.Context, name, alias string, version int) (api.WorkflowAlias, error) {
	var a api.WorkflowAlias
	err := c.do(ctx, "PUT", "/v1/workflows/"+url.PathEscape(name)+"/aliases/"+url.PathEscape(alias), api.SetAlias{Version: version}, &a)
	return a, err
}

// DeleteWorkflowAlias removes an alias of a workflow (admin).
func (c *Client) DeleteWorkflowAlias(ctx context.Context, name, alias string) error {
	return c.do(ctx, "DELETE", "/v1/workflows/"+url.PathEscape(name)+"/aliases/"+url.PathEscape(alias), nil, nil)
}

// WorkflowDiff compares two versions of a workflow, each named by a
// reference.
func (c *Client) WorkflowDiff(ctx context.Context, name, from, to string) (api.WorkflowDiff, error) {
	q := url.Values{"from": {from}, "to": {to}}
	var d api.WorkflowDiff
	err := c.do(ctx, "GET", "/v1/workflows/"+url.PathEscape(name)+"/diff?"+q.Encode(), nil, &d)
	return d, err
}
