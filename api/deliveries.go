package api

import (
	"encoding/json"
	"time"
)

// Delivery is the delivery of one event a workflow emitted to a webhook
// channel (ASL Events), as GET /v1/deliveries lists it: the outbox entry
// and where its delivery stands.
type Delivery struct {
	// ID identifies the event; a receiver gets it as webhook-id.
	ID string `json:"id"`
	// Execution emitted it, to its workflow's channel Channel.
	Execution string `json:"execution"`
	Channel   string `json:"channel"`
	// URL is where it goes, without the userinfo, query and fragment of
	// the channel's URL (where secrets ride).
	URL string `json:"url"`
	// Type is the event's type, like "state.entered".
	Type string `json:"type"`
	// Status is PENDING, DELIVERED or FAILED (parked after its last
	// attempt: POST /v1/deliveries/{id}/retry makes it PENDING again).
	Status string `json:"status"`
	// Attempts counts the attempts made; LastError says why the last
	// one failed, absent when none did.
	Attempts  int    `json:"attempts"`
	LastError string `json:"lastError,omitempty"`
	// NextAt is when a pending delivery is due; DeliveredAt when it was
	// delivered; CreatedAt when the step that emitted it committed.
	NextAt      *time.Time `json:"nextAt,omitempty"`
	DeliveredAt *time.Time `json:"deliveredAt,omitempty"`
	CreatedAt   time.Time  `json:"createdAt"`
	// Body is the JSON the receiver gets; only with ?body=1.
	Body json.RawMessage `json:"body,omitempty"`
}

// DeliveryPage is a page of GET /v1/deliveries, in id order (oldest
// first); Next, when set, is the cursor of the next page (?after=).
type DeliveryPage struct {
	Deliveries []Delivery `json:"deliveries"`
	Next       string     `json:"next,omitempty"`
}
