package api

import (
	"encoding/json"
	"time"
)

// MapRun is a Distributed Map's map run, as GET
// /v1/executions/{id}/map-runs lists it.
type MapRun struct {
	// ID is the map run's id, "<execution>/<state>#<visit>.<attempt>";
	// its children are "<id>:<index>".
	ID string `json:"id"`
	// ARN is its ARN as AWS spells it (MapRunArn).
	ARN       string `json:"arn"`
	Execution string `json:"execution"`
	State     string `json:"state"`
	Label     string `json:"label,omitempty"`
	// Status is RUNNING, SUCCEEDED, FAILED or ABORTED.
	Status string `json:"status"`
	// Total, Succeeded, Failed, Aborted and Pending count the children.
	Total     int `json:"total"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Aborted   int `json:"aborted"`
	Pending   int `json:"pending"`
	// ResultWriterDetails is where a ResultWriter wrote the manifest
	// ({"Bucket", "Key"}), absent when it has none.
	ResultWriterDetails json.RawMessage `json:"resultWriterDetails,omitempty"`
	StartedAt           *time.Time      `json:"startedAt,omitempty"`
	StoppedAt           *time.Time      `json:"stoppedAt,omitempty"`
	RedriveCount        int             `json:"redriveCount,omitempty"`
	RedrivenAt          *time.Time      `json:"redrivenAt,omitempty"`
}

// MapRunList is the answer of GET /v1/executions/{id}/map-runs.
type MapRunList struct {
	Execution string   `json:"execution"`
	MapRuns   []MapRun `json:"mapRuns"`
}

// MapRunChild is one child execution of a map run.
type MapRunChild struct {
	Index  int    `json:"index"`
	ID     string `json:"id"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	Cause  string `json:"cause,omitempty"`
}

// MapRunChildList is a page of GET
// /v1/executions/{id}/map-runs/{mapRun}/children; Next, when set, is the
// cursor of the next page (?after=).
type MapRunChildList struct {
	MapRun   string        `json:"mapRun"`
	Children []MapRunChild `json:"children"`
	Next     string        `json:"next,omitempty"`
}
