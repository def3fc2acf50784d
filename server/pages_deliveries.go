package server

// The deliveries page: the webhook deliveries of ASL Events, FAILED ones
// first (a tab a status), each with its last error and, for operators, a
// button that retries a FAILED one.

import (
	"net/http"
	"net/url"

	"github.com/aslrun/aslrun/engine"
)

// deliveriesPerPage is how many deliveries a page of /deliveries shows.
const deliveriesPerPage = 50

// deliveryTab is one of the deliveries page's tabs.
type deliveryTab struct {
	Label, Status, Href string
	Current             bool
}

// deliveriesData is the deliveries page's data.
type deliveriesData struct {
	base
	Status, Execution string
	Tabs              []deliveryTab
	Deliveries        []deliveryRow
	Next              string
	// CanRetry: the caller may retry (an operator or admin).
	CanRetry bool
	// Retried is the delivery just retried ("" when none): the page
	// says it is pending again.
	Retried string
}

// deliveryRow is a delivery as the page shows it.
type deliveryRow struct {
	engine.Delivery
	// URL is the delivery's URL without userinfo, query and fragment.
	URL string
}

// deliveriesPage lists the deliveries of a status, FAILED when none is
// asked for ("all" lists every status), a page at a time; a query the
// list cannot take shows the page with why.
func (s *Server) deliveriesPage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	retried := q.Get("retried")
	q.Del("retried")
	return s.showDeliveries(w, r, q, retried, nil)
}

// showDeliveries renders the deliveries page for query q, saying that
// delivery retried is pending again (when set) or why refusal was
// refused (when not nil), with refusal's status.
func (s *Server) showDeliveries(w http.ResponseWriter, r *http.Request, q url.Values, retried string, refusal *problem) error {
	p, _ := principalOf(r.Context())
	data := deliveriesData{base: baseOf(r, "Deliveries"), CanRetry: p.Role.allows(RoleOperator), Retried: retried}
	switch q.Get("status") {
	case "":
		q.Set("status", engine.DeliveryFailed)
	case "all":
		q.Del("status")
	}
	data.Status, data.Execution = q.Get("status"), q.Get("execution")
	data.Tabs = deliveryTabs(data.Status, data.Execution)
	status := http.StatusOK
	if refusal != nil {
		status, data.Error = refusal.status, refusal.detail
	}
	if q.Has("limit") || q.Has("body") {
		data.Error = "the page takes status, execution and after; limit and body are the API's (GET /v1/deliveries)"
		return s.render(w, http.StatusBadRequest, "deliveries", data)
	}
	dq, err := parseDeliveryQuery(q)
	var list []engine.Delivery
	var next string
	if err == nil {
		dq.filter.Limit, dq.limit = deliveriesPerPage, deliveriesPerPage
		list, next, err = s.deliveries(r.Context(), dq)
	}
	if err != nil {
		pr := problemOf(err)
		if pr.status >= http.StatusInternalServerError && pr.status != http.StatusNotImplemented {
			return err
		}
		data.Error = pr.detail
		return s.render(w, pr.status, "deliveries", data)
	}
	data.Status = dq.filter.Status
	data.Tabs = deliveryTabs(data.Status, data.Execution)
	for _, d := range list {
		data.Deliveries = append(data.Deliveries, deliveryRow{Delivery: d, URL: redactURL(d.URL)})
	}
	if next != "" {
		v := pageValues(data.Status, data.Execution)
		v.Set("after", next)
		data.Next = "/deliveries?" + v.Encode()
	}
	return s.render(w, status, "deliveries", data)
}

// deliveryTabs are the page's tabs, current the one of status, each
// keeping the execution filter.
func deliveryTabs(status, execution string) []deliveryTab {
	tabs := []deliveryTab{{Label: "Failed", Status: engine.DeliveryFailed}, {Label: "Pending", Status: engine.DeliveryPending},
		{Label: "Delivered", Status: engine.DeliveryDelivered}, {Label: "All", Status: ""}}
	for i := range tabs {
		tabs[i].Href = "/deliveries?" + pageValues(tabs[i].Status, execution).Encode()
		tabs[i].Current = tabs[i].Status == status
	}
	return tabs
}

// pageValues is the page's query for status ("": all) and execution.
func pageValues(status, execution string) url.Values {
	v := url.Values{"status": {status}}
	if status == "" {
		v.Set("status", "all")
	}
	if execution != "" {
		v.Set("execution", execution)
	}
	return v
}

// retryPage retries a FAILED delivery and goes back to the failed ones,
// saying it is pending again; a delivery that is not FAILED, or none,
// shows the failed ones with why.
func (s *Server) retryPage(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := s.retry(r, id); err != nil {
		pr := problemOf(err)
		if pr.status >= http.StatusInternalServerError {
			return err
		}
		return s.showDeliveries(w, r, url.Values{}, "", pr)
	}
	v := pageValues(engine.DeliveryFailed, "")
	v.Set("retried", id)
	http.Redirect(w, r, "/deliveries?"+v.Encode(), http.StatusSeeOther)
	return nil
}
