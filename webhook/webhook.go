// Package webhook delivers the events executions emit to their
// workflows' webhook channels (ASL Events): it claims due deliveries from
// a store's outbox (engine.OutboxStore) under a lease, POSTs each event's
// JSON, signed as Standard Webhooks signs (webhook-id, webhook-timestamp
// and webhook-signature headers: HMAC-SHA256 over "id.timestamp.body"),
// and records the outcome: delivered on a 2xx answer; otherwise retried
// with exponential backoff, and parked after MaxAttempts (listed, and
// retried by hand, through the server's API: a retried delivery gets
// MaxAttempts more).
//
// Delivery is at least once: an event whose 2xx answer was lost (the
// process died before recording it) is sent again, with the same
// webhook-id, which a receiver deduplicates by. The URL's host, and
// every redirect's, must be one the owner's host policy allows
// (egress.Policy): a refused host parks the delivery at once.
package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/aslrun/aslrun/egress"
	"github.com/aslrun/aslrun/engine"
)

// Defaults of a Deliverer.
const (
	DefaultMaxAttempts = 8
	DefaultBatch       = 16
	DefaultTimeout     = 10 * time.Second
	DefaultPoll        = 500 * time.Millisecond
	// DefaultFirstRetry doubles after each failure, up to DefaultMaxRetry.
	DefaultFirstRetry = time.Second
	DefaultMaxRetry   = 10 * time.Minute
)

// Config configures a Deliverer. Store is required.
type Config struct {
	// Store is the outbox.
	Store engine.OutboxStore
	// Owner names this process in the leases (its deliveries); empty
	// means the host name and process id.
	Owner string
	// Hosts decides which hosts deliveries may reach; nil means the
	// default policy (public addresses only).
	Hosts *egress.Policy
	// Secret signs the deliveries of channels without a SecretEnv of
	// their own. It is read from the environment variable
	// ASLRUN_WEBHOOK_SECRET when nil; without either, deliveries are
	// refused (parked) rather than sent unsigned.
	Secret []byte
	// LookupEnv reads a channel's SecretEnv (nil: os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// MaxAttempts, Batch, Timeout (per attempt), Poll (how often the
	// outbox is read when idle), FirstRetry and MaxRetry; zero means the
	// default.
	MaxAttempts int
	Batch       int
	Timeout     time.Duration
	Poll        time.Duration
	FirstRetry  time.Duration
	MaxRetry    time.Duration
	// Logger receives what is worth knowing; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Deliverer delivers an outbox's events. Run it with Run.
type Deliverer struct {
	cfg    Config
	client *http.Client
	log    *slog.Logger
	wake   chan struct{}

	mu      sync.Mutex
	signers map[string]*standardwebhooks.Webhook
}

// New returns a Deliverer of cfg.
func New(cfg Config) (*Deliverer, error) {
	if cfg.Store == nil {
		return nil, errors.New("webhook: Config.Store is required")
	}
	if cfg.Owner == "" {
		host, _ := os.Hostname()
		cfg.Owner = host + ":" + strconv.Itoa(os.Getpid())
	}
	if cfg.LookupEnv == nil {
		cfg.LookupEnv = os.LookupEnv
	}
	if cfg.Secret == nil {
		if s, ok := cfg.LookupEnv("ASLRUN_WEBHOOK_SECRET"); ok && s != "" {
			cfg.Secret = []byte(s)
		}
	}
	for _, d := range []struct {
		v   *int
		def int
	}{{&cfg.MaxAttempts, DefaultMaxAttempts}, {&cfg.Batch, DefaultBatch}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&cfg.Timeout, DefaultTimeout}, {&cfg.Poll, DefaultPoll}, {&cfg.FirstRetry, DefaultFirstRetry}, {&cfg.MaxRetry, DefaultMaxRetry}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	hosts := cfg.Hosts
	if hosts == nil {
		hosts = &egress.Policy{}
	}
	d := &Deliverer{cfg: cfg, client: hosts.Client(), log: cfg.Logger, wake: make(chan struct{}, 1), signers: map[string]*standardwebhooks.Webhook{}}
	if d.log == nil {
		d.log = slog.Default()
	}
	return d, nil
}

// Wake makes Run look at the outbox now (a commit just wrote to it).
func (d *Deliverer) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx is done: it claims due deliveries, attempts
// each, and waits Poll (or a Wake) when none is due.
func (d *Deliverer) Run(ctx context.Context) error {
	for {
		n, err := d.DeliverDue(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			d.log.Warn("webhook deliveries could not be claimed", "error", err)
		}
		if n > 0 && err == nil {
			continue
		}
		t := time.NewTimer(d.cfg.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-d.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// DeliverDue claims one batch of due deliveries and attempts them at
// once; it returns how many it claimed. A claim lasts an attempt's
// Timeout and as much again: a process that dies holding it delays those
// deliveries by that much.
func (d *Deliverer) DeliverDue(ctx context.Context) (int, error) {
	due, err := d.cfg.Store.ClaimDeliveries(ctx, d.cfg.Owner, d.cfg.Batch, d.cfg.Now(), 2*d.cfg.Timeout)
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	for _, dl := range due {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.attempt(ctx, dl)
		}()
	}
	wg.Wait()
	return len(due), nil
}

// attempt makes one delivery attempt and records its outcome.
func (d *Deliverer) attempt(ctx context.Context, dl engine.Delivery) {
	errText, park := d.send(ctx, dl)
	if ctx.Err() != nil && errText != "" {
		// Cut short by the process stopping: the lease runs out, and
		// another attempt will be made. (A delivery the receiver took is
		// recorded even then.)
		return
	}
	now := d.cfg.Now()
	retryAt := time.Time{}
	if errText != "" {
		// Attempts counts every attempt, those before a retry by hand
		// too: each retry gets MaxAttempts more.
		n := (dl.Attempts-1)%d.cfg.MaxAttempts + 1
		park = park || n >= d.cfg.MaxAttempts
		retryAt = now.Add(d.backoff(n))
		d.log.Warn("a webhook delivery failed", "delivery", dl.ID, "execution", dl.Execution, "channel", dl.Channel, "attempt", dl.Attempts, "parked", park, "error", errText)
	}
	if err := d.cfg.Store.FinishDelivery(context.WithoutCancel(ctx), dl.ID, d.cfg.Owner, now, errText, retryAt, park); err != nil {
		d.log.Warn("a webhook delivery's outcome could not be recorded: it will be sent again", "delivery", dl.ID, "error", err)
	}
}

// backoff is how long after failed attempt n (from 1) the next is due.
func (d *Deliverer) backoff(n int) time.Duration {
	wait := d.cfg.FirstRetry
	for i := 1; i < n && wait < d.cfg.MaxRetry; i++ {
		wait *= 2
	}
	return min(wait, d.cfg.MaxRetry)
}

// send POSTs the delivery; it returns "" when the receiver took it, or
// why not and whether trying again is pointless (park).
func (d *Deliverer) send(ctx context.Context, dl engine.Delivery) (errText string, park bool) {
	signer, err := d.signer(dl)
	if err != nil {
		return err.Error(), true
	}
	// The signature's time is the wall clock's: the receiver checks it
	// against its own.
	now := time.Now()
	sig, err := signer.Sign(dl.ID, now, dl.Body)
	if err != nil {
		return fmt.Sprintf("sign: %v", err), true
	}
	cctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, dl.URL, bytes.NewReader(dl.Body))
	if err != nil {
		return fmt.Sprintf("the channel's Url: %v", err), true
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "aslrun")
	req.Header.Set(standardwebhooks.HeaderWebhookID, dl.ID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	resp, err := d.client.Do(req)
	var denied *egress.DeniedError
	switch {
	case errors.As(err, &denied):
		return fmt.Sprintf("POST %s: %v", dl.URL, denied), true
	case err != nil:
		return fmt.Sprintf("POST %s: %v", dl.URL, err), false
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Sprintf("POST %s: %s", dl.URL, resp.Status), false
	}
	return "", false
}

// signer returns the signer of a delivery's channel: its SecretEnv's
// secret (read when first needed), or the default secret.
func (d *Deliverer) signer(dl engine.Delivery) (*standardwebhooks.Webhook, error) {
	env := dl.SecretEnv
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.signers[env]; ok {
		return s, nil
	}
	secret := d.cfg.Secret
	if env != "" {
		v, ok := d.cfg.LookupEnv(env)
		if !ok || v == "" {
			return nil, fmt.Errorf("the channel's SecretEnv %s is not set in the server's environment: the event is not sent unsigned", env)
		}
		secret = []byte(v)
	}
	if len(secret) == 0 {
		return nil, errors.New("no signing secret: set ASLRUN_WEBHOOK_SECRET (or the channel's SecretEnv) in the server's environment; events are never sent unsigned")
	}
	var s *standardwebhooks.Webhook
	var err error
	if bytes.HasPrefix(secret, []byte("whsec_")) {
		s, err = standardwebhooks.NewWebhook(string(secret))
	} else {
		s, err = standardwebhooks.NewWebhookRaw(secret)
	}
	if err != nil {
		return nil, fmt.Errorf("the signing secret: %v", err)
	}
	d.signers[env] = s
	return s, nil
}
