package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
	"github.com/aslrun/aslrun/engine"
)

// leaseCounts samples, until stop is closed, how many live leases each
// owner holds, and returns the most each ever held.
func leaseCounts(t *testing.T, url string, stop <-chan struct{}) <-chan map[string]int {
	t.Helper()
	out := make(chan map[string]int, 1)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer conn.Close(ctx)
		most := map[string]int{}
		defer func() { out <- most }()
		for {
			rows, err := conn.Query(ctx, `SELECT owner, count(*) FROM leases WHERE owner <> '' AND expires_at > clock_timestamp() GROUP BY owner`)
			if err == nil {
				for rows.Next() {
					var owner string
					var n int
					if rows.Scan(&owner, &n) == nil {
						most[owner] = max(most[owner], n)
					}
				}
				rows.Close()
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return out
}

// TestPostgresDispatchAcrossServers: two `aslrun serve` processes on one
// database, each with --max-concurrent 2 and a poll too rare to matter;
// every start goes to the first. The first runs two at a time and leaves
// the rest, which the second, woken, claims: both run executions, never
// more than two at once each, and every execution ends.
func TestPostgresDispatchAcrossServers(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode")
	}
	url, db := pgDatabase(t)
	servers := startServers(t, url, 2, "--max-concurrent", "2", "--poll", "1h")
	def := json.RawMessage(`{"StartAt":"Work","States":{"Work":{"Type":"Task","Agent":"Worker","End":true}}}`)
	mock := json.RawMessage(`{"Worker":{"0":{"Return":"done","DelaySeconds":0.5}}}`)
	stop := make(chan struct{})
	counts := leaseCounts(t, url, stop)
	c := client.NewUnix(servers[0].sock)
	ids := make([]string, 8)
	for i := range ids {
		ids[i] = fmt.Sprintf("d%d", i)
		if _, err := c.Start(context.Background(), api.StartExecution{Definition: def, Mock: mock, Name: ids[i], Input: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	ended := awaitEnded(t, db, ids, 60*time.Second, serverLogs(servers))
	close(stop)
	most := <-counts
	for _, id := range ids {
		if e := ended[id]; e.Status != engine.StatusSucceeded {
			t.Errorf("%s: %s (%s: %s), want SUCCEEDED", id, e.Status, e.Error, e.Cause)
		}
	}
	for i, s := range servers {
		n := 0
		for owner, k := range most {
			if ownedBy(owner, s.pid()) {
				n = k
			}
		}
		if n == 0 || n > 2 {
			t.Errorf("server %d held at most %d executions at once, want 1 or 2 (the cap); leases seen: %v", i, n, most)
		}
	}
}

// stopVia stops execution id through the API on socket sock.
func stopVia(ctx context.Context, sock, id string, req api.Stop) (api.Execution, int, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return api.Execution{}, 0, err
	}
	hc := &http.Client{Transport: unixTransport(sock)}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://aslrun/v1/executions/"+id+"/stop", bytes.NewReader(body))
	if err != nil {
		return api.Execution{}, 0, err
	}
	r.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(r)
	if err != nil {
		return api.Execution{}, 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return api.Execution{}, 0, err
	}
	var e api.Execution
	if resp.StatusCode == http.StatusOK {
		err = json.Unmarshal(data, &e)
	} else {
		err = fmt.Errorf("stop: %s: %s", resp.Status, data)
	}
	return e, resp.StatusCode, err
}

// TestPostgresStopAcrossServers: an execution runs on one server, in an
// agent call that takes a minute; a stop sent to the other server reaches
// it: the call is cancelled, the execution ends ABORTED with the stop's
// error and cause, once, and the stop answers with it.
func TestPostgresStopAcrossServers(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode")
	}
	url, db := pgDatabase(t)
	servers := startServers(t, url, 2)
	def := json.RawMessage(`{"StartAt":"Work","States":{"Work":{"Type":"Task","Agent":"Worker","End":true}}}`)
	mock := json.RawMessage(`{"Worker":{"0":{"Return":"done","DelaySeconds":60}}}`)
	ctx := context.Background()
	if _, err := client.NewUnix(servers[0].sock).Start(ctx, api.StartExecution{Definition: def, Mock: mock, Name: "long", Input: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if owner, _ := leaseOwner(t, url, "long"); !ownedBy(owner, servers[0].pid()) {
		t.Fatalf("long is leased by %q, want server 0 (pid %d)", owner, servers[0].pid())
	}
	// Well within the agent's minute: a stop that did not reach the run
	// would wait for it to end, and find it SUCCEEDED.
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	e, code, err := stopVia(sctx, servers[1].sock, "long", api.Stop{Error: "Halted", Cause: "sent to the other server"})
	if err != nil {
		t.Log(serverLogs(servers)())
		t.Fatalf("stop through server 1: %d %v", code, err)
	}
	if e.Status != "ABORTED" || e.Error != "Halted" || e.Cause != "sent to the other server" {
		t.Errorf("stop answered %s %q %q, want ABORTED Halted", e.Status, e.Error, e.Cause)
	}
	got := awaitEnded(t, db, []string{"long"}, 10*time.Second, serverLogs(servers))["long"]
	if got.Status != engine.StatusAborted || got.Error != "Halted" {
		t.Errorf("long: %s %q, want ABORTED Halted", got.Status, got.Error)
	}
	aborted := 0
	for _, ev := range historyOf(t, url, "long") {
		if ev.Type == "ExecutionAborted" {
			aborted++
		}
		if ev.Type == "TaskSucceeded" {
			t.Error("the agent call completed: the stop did not cancel it")
		}
	}
	if aborted != 1 {
		t.Errorf("%d ExecutionAborted events, want 1", aborted)
	}
	// The run on server 0 was stopped, not failed.
	if log := servers[0].p.log.String(); strings.Contains(log, "level=ERROR") {
		t.Errorf("server 0 logged an error:\n%s", servers[0].p.log)
	}
}

// TestServeRefusesDispatchFlags: what serve refuses of --max-concurrent
// and --poll.
func TestServeRefusesDispatchFlags(t *testing.T) {
	t.Parallel()
	db := t.TempDir() + "/r.db"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-concurrent", "0"}, "--max-concurrent 0: want 1 or more"},
		{[]string{"--max-concurrent", "-3"}, "--max-concurrent -3: want 1 or more"},
		{[]string{"--max-concurrent", "many"}, "invalid value"},
		{[]string{"--poll", "0s"}, "--poll 0s: want a duration above 0"},
		{[]string{"--poll", "-1s"}, "--poll -1s: want a duration above 0"},
	} {
		code, _, errOut := invoke(t, "", append([]string{"serve", "--db", db}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("serve %v: exit %d, %q; want 2 saying %q", tc.args, code, errOut, tc.want)
		}
	}
}
