package api

import (
	"encoding/json"
	"time"
)

// FeedbackRequest is the body of POST /v1/executions/{id}/feedback: a
// person's feedback on the output of a state whose Feedback block
// collects it.
type FeedbackRequest struct {
	// State names the state (as its Task is named in the definition).
	State string `json:"state"`
	// Step picks the state's visit ("Classify#2") when it ran more than
	// once; empty means its latest.
	Step string `json:"step,omitempty"`
	// Value is the feedback, as the block's Type says: a number
	// (rating), "up" or "down" (thumbs), a label (choice), text, or an
	// object of the block's Fields (structured).
	Value json.RawMessage `json:"value"`
	// Comment is optional free text, at most 10000 characters.
	Comment string `json:"comment,omitempty"`
}

// Feedback is feedback as the API answers and lists it.
type Feedback struct {
	ID        string          `json:"id"`
	Execution string          `json:"execution"`
	Workflow  string          `json:"workflow"`
	State     string          `json:"state"`
	Step      string          `json:"step"`
	By        string          `json:"by"`
	Role      string          `json:"role"`
	Type      string          `json:"type"`
	Value     json.RawMessage `json:"value"`
	Comment   string          `json:"comment,omitempty"`
	// Output is the state's output the feedback is about.
	Output    json.RawMessage `json:"output,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
}

// FeedbackPage is a page of GET /v1/feedback, in id (time) order; Next,
// when set, is the cursor of the next page (?after=).
type FeedbackPage struct {
	Feedback []Feedback `json:"feedback"`
	Next     string     `json:"next,omitempty"`
}
