package server

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"net/url"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/aslrun/aslrun/engine"
)

// FuzzPollBody: whatever a stranger sends to the poll route (body, name,
// wait), readPoll never panics, refuses with a problem, and what it
// accepts is valid: a real activity name, a wait within the limit, a
// worker name of at most 80 characters with no control character.
func FuzzPollBody(f *testing.F) {
	for _, seed := range []struct{ body, name, wait string }{
		{`{"workerName":"py-1"}`, "review", "5"},
		{`{}`, "a.b-c_d", ""},
		{`{"workerName":5}`, "review", "60"},
		{`{"workerName":"a","workerName":"b"}`, "x", "61"},
		{`{"worker":"a"}`, "no spaces", "-1"},
		{`{"workerName":"a\u0007"}`, "review", "1e3"},
		{`[`, "", "0"},
		{"", "review", "9999999999999999999999"},
		{`{"workerName":"\ud800"}`, "review", "0"},
	} {
		f.Add([]byte(seed.body), seed.name, seed.wait)
	}
	f.Fuzz(func(t *testing.T, body []byte, name, wait string) {
		r := httptest.NewRequest("POST", "/v1/activities/x/poll?wait="+url.QueryEscape(wait), bytes.NewReader(body))
		r.SetPathValue("name", name)
		p, err := readPoll(r)
		if err != nil {
			var pr *problem
			if !errors.As(err, &pr) || pr.status != 400 {
				t.Fatalf("readPoll error %v is not a 400 problem", err)
			}
			return
		}
		if !engine.ValidActivityName(p.name) || p.wait < 0 || p.wait > maxPollWait {
			t.Fatalf("readPoll accepted %+v", p)
		}
		if utf8.RuneCountInString(p.worker) > maxWorkerName {
			t.Fatalf("readPoll accepted a worker name of %d characters", utf8.RuneCountInString(p.worker))
		}
		for _, c := range p.worker {
			if unicode.IsControl(c) {
				t.Fatalf("readPoll accepted a worker name with %U", c)
			}
		}
	})
}
