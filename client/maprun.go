package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/aslrun/aslrun/api"
)

// MapRuns lists the map runs of an execution's Distributed Maps, with
// their children's counts.
func (c *Client) MapRuns(ctx context.Context, id string) (api.MapRunList, error) {
	var l api.MapRunList
	err := c.do(ctx, "GET", "/v1/executions/"+url.PathEscape(id)+"/map-runs", nil, &l)
	return l, err
}

// ChildrenQuery selects a page of a map run's children; its zero value
// asks for the first page of all of them.
type ChildrenQuery struct {
	// Status, when set, keeps the children in that status.
	Status string
	// After is the cursor: the previous page's Next ("" for the first).
	After string
	// Limit caps the page (0: the server's default, 100).
	Limit int
}

// MapRunChildren returns a page of the children of map run mapRun (its id
// as MapRuns lists it) of execution id.
func (c *Client) MapRunChildren(ctx context.Context, id, mapRun string, q ChildrenQuery) (api.MapRunChildList, error) {
	v := url.Values{}
	if q.Status != "" {
		v.Set("status", q.Status)
	}
	if q.After != "" {
		v.Set("after", q.After)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var l api.MapRunChildList
	err := c.do(ctx, "GET", "/v1/executions/"+url.PathEscape(id)+"/map-runs/"+url.PathEscape(mapRun)+"/children?"+v.Encode(), nil, &l)
	return l, err
}
