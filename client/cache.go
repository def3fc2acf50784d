package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/aslrun/aslrun/api"
)

// CacheQuery selects entries of the result cache (GET /v1/cache); the
// zero value lists the first 100.
type CacheQuery struct {
	Workflow, Scope, After string
	Limit                  int
	// Results includes each entry's result.
	Results bool
}

// Cache lists a page of the result cache's live entries, in key order
// (admin).
func (c *Client) Cache(ctx context.Context, q CacheQuery) (api.CachePage, error) {
	v := url.Values{}
	for _, p := range [][2]string{{"workflow", q.Workflow}, {"scope", q.Scope}, {"after", q.After}} {
		if p[1] != "" {
			v.Set(p[0], p[1])
		}
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Results {
		v.Set("results", "1")
	}
	path := "/v1/cache"
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var p api.CachePage
	err := c.do(ctx, "GET", path, nil, &p)
	return p, err
}

// PurgeCache removes the entry of key, or every entry when key is empty,
// and returns how many were removed (admin).
func (c *Client) PurgeCache(ctx context.Context, key string) (int, error) {
	path := "/v1/cache"
	if key != "" {
		path += "/" + url.PathEscape(key)
	}
	var p api.CachePurged
	err := c.do(ctx, "DELETE", path, nil, &p)
	return p.Purged, err
}
