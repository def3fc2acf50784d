package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/aslrun/aslrun/api"
)

// DeliveriesQuery selects a page of webhook deliveries; its zero value
// asks for the first page of all of them, without their bodies.
type DeliveriesQuery struct {
	// Status, when set, keeps the deliveries in that status: PENDING,
	// DELIVERED or FAILED.
	Status string
	// Execution, when set, keeps the deliveries of that execution.
	Execution string
	// After is the cursor: the previous page's Next ("" for the first).
	After string
	// Limit caps the page (0: the server's default, 100; at most 1000).
	Limit int
	// Body asks for each delivery's body too.
	Body bool
}

// Deliveries returns a page of the webhook deliveries of the events
// workflows emit (ASL Events), in id order: oldest first.
func (c *Client) Deliveries(ctx context.Context, q DeliveriesQuery) (api.DeliveryPage, error) {
	v := url.Values{}
	for _, p := range [][2]string{{"status", q.Status}, {"execution", q.Execution}, {"after", q.After}} {
		if p[1] != "" {
			v.Set(p[0], p[1])
		}
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Body {
		v.Set("body", "1")
	}
	path := "/v1/deliveries"
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var p api.DeliveryPage
	err := c.do(ctx, "GET", path, nil, &p)
	return p, err
}

// RetryDelivery makes a FAILED (parked) delivery PENDING and due at once,
// and returns it as it then is. The server answers 404 for an unknown id
// and 409 for a delivery that is not FAILED (see StatusOf).
func (c *Client) RetryDelivery(ctx context.Context, id string) (api.Delivery, error) {
	var d api.Delivery
	err := c.do(ctx, "POST", "/v1/deliveries/"+url.PathEscape(id)+"/retry", nil, &d)
	return d, err
}
