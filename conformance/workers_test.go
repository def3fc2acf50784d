package conformance

import (
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

// TestParseWorkersRefusals: a malformed worker script says which worker
// and field are wrong.
func TestParseWorkersRefusals(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"not a list", `{}`, "workers must be an array"},
		{"not an object", `[1]`, "workers[0] must be an object"},
		{"no activity", `[{"success":1}]`, `workers[0]: activity "" is not an activity name`},
		{"bad activity", `[{"activity":"a b","success":1}]`, `workers[0]: activity "a b" is not an activity name`},
		{"activity not a string", `[{"activity":1,"success":1}]`, "workers[0].activity must be a string"},
		{"no answer", `[{"activity":"a"}]`, "workers[0]: give exactly one of success, failure and abandon"},
		{"two answers", `[{"activity":"a","success":1,"abandon":true}]`, "workers[0]: give exactly one of success, failure and abandon"},
		{"negative wait", `[{"activity":"a","success":1,"poll_after_seconds":-1}]`, "workers[0].poll_after_seconds must be a non-negative number"},
		{"bad failure", `[{"activity":"a","failure":{"error":1}}]`, `workers[0].failure: want string fields error and cause, not "error"`},
		{"abandon false", `[{"activity":"a","abandon":false}]`, "workers[0].abandon must be true"},
		{"unknown field", `[{"activity":"a","success":1,"sucess":2}]`, `workers[0]: unknown field "sucess"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := jsonvalue.Decode([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			_, err = ParseWorkers(v)
			if err == nil || err.Error() != tc.want {
				t.Errorf("ParseWorkers(%s) = %v, want %q", tc.in, err, tc.want)
			}
		})
	}
	v, _ := jsonvalue.Decode([]byte(`[{"activity":"a.b-c_d","worker":"w","success":{"x":1},"input":null,"heartbeat_every_seconds":0.5}]`))
	got, err := ParseWorkers(v)
	if err != nil || len(got) != 1 || got[0].Name != "w" || !got[0].HasInput || got[0].HeartbeatEvery != 0.5 {
		t.Errorf("ParseWorkers = %+v, %v", got, err)
	}
}
