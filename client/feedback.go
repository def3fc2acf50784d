package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/aslrun/aslrun/api"
)

// FeedbackQuery selects feedback (GET /v1/feedback); the zero value lists
// the first 100.
type FeedbackQuery struct {
	Workflow, State, Execution, After string
	Limit                             int
}

// Feedback lists a page of feedback in time order (viewer).
func (c *Client) Feedback(ctx context.Context, q FeedbackQuery) (api.FeedbackPage, error) {
	v := url.Values{}
	for _, p := range [][2]string{{"workflow", q.Workflow}, {"state", q.State}, {"execution", q.Execution}, {"after", q.After}} {
		if p[1] != "" {
			v.Set(p[0], p[1])
		}
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	path := "/v1/feedback"
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var p api.FeedbackPage
	err := c.do(ctx, "GET", path, nil, &p)
	return p, err
}

// GiveFeedback gives feedback on the output of a state of execution id
// (approver), and returns it as stored.
func (c *Client) GiveFeedback(ctx context.Context, id string, f api.FeedbackRequest) (api.Feedback, error) {
	var out api.Feedback
	err := c.do(ctx, "POST", "/v1/executions/"+url.PathEscape(id)+"/feedback", f, &out)
	return out, err
}
