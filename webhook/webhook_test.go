package webhook_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/aslrun/aslrun/egress"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/webhook"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// receiver is a webhook endpoint that verifies signatures and answers
// with the statuses of answers in turn (200 once they run out).
type receiver struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	answers []int
	got     []string // webhook-ids, in order
	bodies  []string
}

func newReceiver(t *testing.T, answers ...int) *receiver {
	r := &receiver{t: t, answers: answers}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if err := wh.Verify(body, req.Header); err != nil {
			t.Errorf("receiver: the signature does not verify: %v", err)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got = append(r.got, req.Header.Get("webhook-id"))
		r.bodies = append(r.bodies, string(body))
		status := http.StatusOK
		if len(r.answers) > 0 {
			status, r.answers = r.answers[0], r.answers[1:]
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// commitWith writes one commit of a new execution carrying entries.
func commitWith(t *testing.T, st *store.Memory, id string, entries ...engine.OutboxEntry) {
	t.Helper()
	ctx := context.Background()
	if err := st.Create(ctx, &engine.Execution{ID: id, Status: engine.StatusRunning, StartedAt: time.Now(), Definition: []byte(`{}`), DefinitionHash: "h"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(ctx, &engine.Commit{Execution: id, Seq: 1, Outbox: entries}); err != nil {
		t.Fatal(err)
	}
}

func entry(id, u string) engine.OutboxEntry {
	return engine.OutboxEntry{ID: id, Execution: "e", Channel: "hooks", URL: u, Type: "execution.succeeded", Body: []byte(`{"id":"` + id + `"}`), CreatedAt: time.Now().UTC()}
}

func hostsFor(t *testing.T, u string) *egress.Policy {
	parsed, _ := url.Parse(u)
	p, err := egress.New(egress.Config{Allow: []string{parsed.Host}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWebhookDelivers: a due event is POSTed once, signed so the
// Standard Webhooks library verifies it, with its id as webhook-id, and
// is DELIVERED.
func TestWebhookDelivers(t *testing.T) {
	rc := newReceiver(t)
	st := store.NewMemory()
	commitWith(t, st, "e", entry("01-a", rc.srv.URL+"/hook"))
	d, err := webhook.New(webhook.Config{Store: st, Hosts: hostsFor(t, rc.srv.URL), Secret: []byte(secret)})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.DeliverDue(context.Background()); n != 1 || err != nil {
		t.Fatalf("DeliverDue = %d, %v", n, err)
	}
	if got := rc.ids(); len(got) != 1 || got[0] != "01-a" {
		t.Fatalf("the receiver got %v", got)
	}
	list, err := st.ListDeliveries(context.Background(), engine.DeliveryFilter{})
	if err != nil || len(list) != 1 || list[0].Status != engine.DeliveryDelivered || list[0].Attempts != 1 {
		t.Fatalf("deliveries %+v, %v", list, err)
	}
	if n, _ := d.DeliverDue(context.Background()); n != 0 {
		t.Errorf("a delivered event was claimed again")
	}
}

// TestWebhookRetries: a receiver that answers 500 three times gets the
// event on the fourth attempt, each after its backoff (1 s, 2 s, 4 s on
// the deliverer's clock); one that never answers 2xx is parked after
// MaxAttempts, and RetryDelivery makes it pending again.
func TestWebhookRetries(t *testing.T) {
	rc := newReceiver(t, 500, 500, 500)
	never := newReceiver(t, 503, 503, 503, 503, 503, 503, 503, 503, 503, 503)
	st := store.NewMemory()
	commitWith(t, st, "e", entry("01-a", rc.srv.URL), entry("01-b", never.srv.URL))
	now := time.Now().Add(time.Minute)
	hosts, err := egress.New(egress.Config{Allow: []string{strings.TrimPrefix(rc.srv.URL, "http://"), strings.TrimPrefix(never.srv.URL, "http://")}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := webhook.New(webhook.Config{Store: st, Hosts: hosts, Secret: []byte(secret), MaxAttempts: 4, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, wait := range []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second} {
		now = now.Add(wait - time.Millisecond)
		if i > 0 {
			if n, _ := d.DeliverDue(ctx); n != 0 {
				t.Fatalf("attempt %d: claimed %d before its backoff passed", i+1, n)
			}
		}
		now = now.Add(time.Millisecond)
		if n, err := d.DeliverDue(ctx); n != 2 || err != nil {
			t.Fatalf("attempt %d: DeliverDue = %d, %v", i+1, n, err)
		}
	}
	if got := rc.ids(); len(got) != 4 {
		t.Errorf("the flaky receiver got %d attempts, want 4", len(got))
	}
	list, _ := st.ListDeliveries(ctx, engine.DeliveryFilter{})
	if list[0].Status != engine.DeliveryDelivered || list[1].Status != engine.DeliveryFailed || list[1].Attempts != 4 || !strings.Contains(list[1].LastError, "503") {
		t.Fatalf("deliveries %+v", list)
	}
	failed, _ := st.ListDeliveries(ctx, engine.DeliveryFilter{Status: engine.DeliveryFailed})
	if len(failed) != 1 || failed[0].ID != "01-b" {
		t.Fatalf("parked: %+v", failed)
	}
	if err := st.RetryDelivery(ctx, "01-b", now); err != nil {
		t.Fatal(err)
	}
	// A delivery retried by hand gets MaxAttempts more attempts.
	for i := range 4 {
		if n, _ := d.DeliverDue(ctx); n != 1 {
			t.Fatalf("after the retry, attempt %d was not made", i+1)
		}
		now = now.Add(time.Hour)
	}
	if list, _ := st.ListDeliveries(ctx, engine.DeliveryFilter{Status: engine.DeliveryFailed}); len(list) != 1 || list[0].Attempts != 8 {
		t.Fatalf("after four more failures: %+v", list)
	}
}

// TestWebhookRefuses: a host the owner does not allow, a SecretEnv not
// set, and no secret at all park the delivery without sending it.
func TestWebhookRefuses(t *testing.T) {
	rc := newReceiver(t)
	st := store.NewMemory()
	unsigned := entry("01-c", rc.srv.URL)
	withEnv := entry("01-b", rc.srv.URL)
	withEnv.SecretEnv = "ASLRUN_TEST_UNSET_SECRET"
	commitWith(t, st, "e", entry("01-a", rc.srv.URL), withEnv, unsigned)
	ctx := context.Background()
	// The default policy refuses the loopback receiver.
	d, err := webhook.New(webhook.Config{Store: st, Secret: []byte(secret), LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	d.DeliverDue(ctx)
	list, _ := st.ListDeliveries(ctx, engine.DeliveryFilter{})
	want := map[string]string{"01-a": "is loopback", "01-b": "SecretEnv ASLRUN_TEST_UNSET_SECRET is not set", "01-c": "is loopback"}
	for _, dl := range list {
		if dl.Status != engine.DeliveryFailed || !strings.Contains(dl.LastError, want[dl.ID]) {
			t.Errorf("%s: %s %q, want parked with %q", dl.ID, dl.Status, dl.LastError, want[dl.ID])
		}
	}
	if len(rc.ids()) != 0 {
		t.Error("a refused delivery reached the receiver")
	}
	st2 := store.NewMemory()
	commitWith(t, st2, "e", entry("01-d", rc.srv.URL))
	d2, _ := webhook.New(webhook.Config{Store: st2, Hosts: hostsFor(t, rc.srv.URL), LookupEnv: func(string) (string, bool) { return "", false }})
	d2.DeliverDue(ctx)
	list, _ = st2.ListDeliveries(ctx, engine.DeliveryFilter{})
	if list[0].Status != engine.DeliveryFailed || !strings.Contains(list[0].LastError, "never sent unsigned") {
		t.Errorf("without a secret: %+v", list[0])
	}
}
