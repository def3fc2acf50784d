package client

import (
	"context"
	"net/url"

	"github.com/aslrun/aslrun/api"
)

// Children lists the child executions that the Workflow states and
// states:startExecution Tasks of execution id started, in start order;
// status, when set, keeps those in that status.
func (c *Client) Children(ctx context.Context, id, status string) (api.ChildExecutionList, error) {
	path := "/v1/executions/" + url.PathEscape(id) + "/children"
	if status != "" {
		path += "?" + url.Values{"status": {status}}.Encode()
	}
	var l api.ChildExecutionList
	err := c.do(ctx, "GET", path, nil, &l)
	return l, err
}
