package server

// The webhook deliveries: the outbox of the events workflows emit to
// their webhook channels (ASL Events), listed a page at a time, and a
// parked (FAILED) delivery made pending again by an operator.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// deliveryParams are the query parameters GET /v1/deliveries takes.
var deliveryParams = []string{"status", "execution", "after", "limit", "body"}

// outbox is the server's store as an outbox store, or the problem of a
// store that keeps none.
func (s *Server) outbox() (engine.OutboxStore, error) {
	o, ok := s.st.(engine.OutboxStore)
	if !ok {
		return nil, &problem{status: http.StatusNotImplemented, kind: "no-outbox", title: "no webhook outbox",
			detail: "this server's store keeps no outbox of webhook deliveries (the memory, bbolt and PostgreSQL stores do)"}
	}
	return o, nil
}

// deliveryQuery is a checked query of GET /v1/deliveries.
type deliveryQuery struct {
	filter engine.DeliveryFilter
	// limit is the page's size, filter.Limit or its default.
	limit int
	// body includes the deliveries' bodies.
	body bool
}

// parseDeliveryQuery checks GET /v1/deliveries' query: each parameter
// known and given at most once, status one of the delivery statuses (in
// any case), execution and after text of at most maxExecutionID bytes,
// limit a number the store takes, body 1, true, 0 or false.
func parseDeliveryQuery(q url.Values) (deliveryQuery, error) {
	var dq deliveryQuery
	if err := checkQuery(q, deliveryParams); err != nil {
		return dq, err
	}
	for _, p := range []struct {
		name string
		dst  *string
	}{{"execution", &dq.filter.Execution}, {"after", &dq.filter.After}} {
		v := q.Get(p.name)
		switch {
		case len(v) > maxExecutionID:
			return dq, badRequest("", "%s is %d bytes long, more than %d", p.name, len(v), maxExecutionID)
		case !utf8.ValidString(v):
			return dq, badRequest("", "%s is not valid UTF-8", p.name)
		case strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f }):
			return dq, badRequest("", "%s %q contains a control character", p.name, v)
		}
		*p.dst = v
	}
	dq.filter.Status = strings.ToUpper(q.Get("status"))
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return dq, badRequest("", "limit %q is not a number (1 to %d)", v, store.MaxDeliveryLimit)
		}
		dq.filter.Limit = n
	}
	limit, err := store.CheckDeliveryFilter(dq.filter)
	if err != nil {
		// status or limit: the store's own words name which.
		return dq, badRequest("", "%v", err)
	}
	dq.limit = limit
	switch v := q.Get("body"); v {
	case "", "0", "false":
	case "1", "true":
		dq.body = true
	default:
		return dq, badRequest("", "body %q is not 1, true, 0 or false", v)
	}
	return dq, nil
}

// deliveries lists the page dq selects, and the next page's cursor (the
// last id when the page is full).
func (s *Server) deliveries(ctx context.Context, dq deliveryQuery) ([]engine.Delivery, string, error) {
	o, err := s.outbox()
	if err != nil {
		return nil, "", err
	}
	list, err := o.ListDeliveries(ctx, dq.filter)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(list) == dq.limit {
		next = list[len(list)-1].ID
	}
	return list, next, nil
}

// listDeliveries answers GET /v1/deliveries: a page of deliveries in id
// order (oldest first).
func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.outbox(); err != nil {
		return err
	}
	dq, err := parseDeliveryQuery(r.URL.Query())
	if err != nil {
		return err
	}
	list, next, err := s.deliveries(r.Context(), dq)
	if err != nil {
		return err
	}
	out := api.DeliveryPage{Deliveries: make([]api.Delivery, len(list)), Next: next}
	for i, d := range list {
		out.Deliveries[i] = deliveryOf(d, dq.body)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// retryDelivery answers POST /v1/deliveries/{id}/retry: a FAILED
// delivery is made PENDING and due now, and the answer is the delivery
// as it then is.
func (s *Server) retryDelivery(w http.ResponseWriter, r *http.Request) error {
	d, err := s.retry(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, deliveryOf(d, false))
	return nil
}

// retry makes the FAILED delivery id PENDING, logs who did, and returns
// it as it then is. An unknown id is ErrNotFound (404); a delivery that
// is not FAILED a 409 problem with the store's refusal, which names its
// status.
func (s *Server) retry(r *http.Request, id string) (engine.Delivery, error) {
	o, err := s.outbox()
	if err != nil {
		return engine.Delivery{}, err
	}
	ctx := r.Context()
	if err := o.RetryDelivery(ctx, id, time.Now()); err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			return engine.Delivery{}, err
		}
		if errors.Is(err, engine.ErrNotParked) {
			return engine.Delivery{}, &problem{status: http.StatusConflict, kind: "not-failed", title: "only a FAILED delivery is retried", detail: err.Error()}
		}
		return engine.Delivery{}, err
	}
	// Logged even when the read back fails: the retry is made.
	d, err := findDelivery(ctx, o, id)
	attrs := []any{"delivery", id}
	if err == nil {
		attrs = append(attrs, "execution", d.Execution, "channel", d.Channel)
	}
	p, _ := principalOf(ctx)
	s.log.Info("delivery retried", append(attrs, "caller", p.Name, "role", p.Role.String())...)
	return d, err
}

// findDelivery reads delivery id, an error wrapping ErrNotFound when
// there is none. The outbox has no read by id, so it lists from just
// below id: the ids that sort between id less its last byte and id
// are the few that share all of its bytes but the last (UUIDv7s alike
// to the millisecond and more), read a page at a time.
func findDelivery(ctx context.Context, o engine.OutboxStore, id string) (engine.Delivery, error) {
	if id == "" {
		return engine.Delivery{}, fmt.Errorf("delivery %q: %w", id, engine.ErrNotFound)
	}
	after := id[:len(id)-1]
	for range findPages {
		list, err := o.ListDeliveries(ctx, engine.DeliveryFilter{After: after, Limit: store.MaxDeliveryLimit})
		if err != nil {
			return engine.Delivery{}, err
		}
		for _, d := range list {
			switch {
			case d.ID == id:
				return d, nil
			case d.ID > id:
				return engine.Delivery{}, fmt.Errorf("delivery %q: %w", id, engine.ErrNotFound)
			}
		}
		if len(list) < store.MaxDeliveryLimit {
			return engine.Delivery{}, fmt.Errorf("delivery %q: %w", id, engine.ErrNotFound)
		}
		after = list[len(list)-1].ID
	}
	return engine.Delivery{}, fmt.Errorf("delivery %q: more than %d deliveries sort between it and the ids of its length less one byte; not read", id, findPages*store.MaxDeliveryLimit)
}

// findPages bounds the pages findDelivery reads.
const findPages = 4

// deliveryOf is a delivery as the API shows it: its URL without userinfo,
// query or fragment, its body only when body is set.
func deliveryOf(d engine.Delivery, body bool) api.Delivery {
	out := api.Delivery{ID: d.ID, Execution: d.Execution, Channel: d.Channel, URL: redactURL(d.URL), Type: d.Type, Status: d.Status,
		Attempts: d.Attempts, LastError: d.LastError, CreatedAt: d.CreatedAt.UTC()}
	if !d.NextAt.IsZero() && d.Status == engine.DeliveryPending {
		t := d.NextAt.UTC()
		out.NextAt = &t
	}
	if !d.DeliveredAt.IsZero() {
		t := d.DeliveredAt.UTC()
		out.DeliveredAt = &t
	}
	if body {
		out.Body = d.Body
	}
	return out
}

// redactURL is a channel's URL without its userinfo, query and fragment,
// where secrets ride; an opaque URL ("scheme:rest") shows its scheme
// alone, and one that does not parse is "(unparsable URL)".
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	if u.Opaque != "" {
		return u.Scheme + ":…"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}
