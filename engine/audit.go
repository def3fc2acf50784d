package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// AuditRecord is what a state with an Audit block did, told to
// Hooks.StateAudited when it stops running: how long it ran, what its
// agents reported consuming, how it ended, and which of those it exports
// (Audit.Metrics).
type AuditRecord struct {
	Execution string
	Workflow  string
	// Scope and State name the state ("Map/3/" and "Check" inside a Map
	// item).
	Scope string
	State string
	// Duration is how long this run of the state took; Usage what its
	// agent calls reported.
	Duration time.Duration
	Usage    Usage
	// Status is "succeeded", "failed" or "waiting"; Error names the error
	// of a failed state (its cause is not given: it may quote inputs).
	Status string
	Error  string
	// Latency, Tokens and Cost say which measures the state exports.
	Latency, Tokens, Cost bool
}

// auditOf returns a state's Audit block, nil for none.
func auditOf(st states.State) *states.AuditConfig {
	if t, ok := st.(*states.Task); ok {
		return t.Audit
	}
	return nil
}

// logLevels are the slog levels of a state's lines per Audit.LogLevel.
var logLevels = map[string]slog.Level{
	states.AuditMinimal:  slog.LevelWarn,
	states.AuditStandard: slog.LevelInfo,
	states.AuditFull:     slog.LevelInfo,
	states.AuditDebug:    slog.LevelDebug,
}

// auditEntered logs the entry of a state whose Audit.LogLevel is debug,
// with its input.
func (h *stateRun) auditEntered(a *states.AuditConfig, input any) {
	if a == nil || a.LogLevel != states.AuditDebug {
		return
	}
	r := h.r
	ctx := context.Background()
	if !r.x.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	r.x.log.LogAttrs(ctx, slog.LevelDebug, "state entered", slog.String("execution", r.exec.ID), slog.String("workflow", r.exec.MachineName),
		slog.String("state", h.qualified()), slog.String("input", r.secrets.viewText(input)))
}

// auditEnded logs how a state with an Audit block ended, at its LogLevel,
// and tells Hooks.StateAudited.
func (h *stateRun) auditEnded(ctx context.Context, a *states.AuditConfig, started time.Time, input any, res *stepResult, err error) {
	if a == nil {
		return
	}
	r := h.r
	rec := AuditRecord{
		Execution: r.exec.ID, Workflow: r.exec.MachineName, Scope: h.sc.prefix, State: h.name(),
		Duration: time.Since(started), Usage: h.used, Status: "succeeded",
		Latency: a.Measures(states.MetricLatency), Tokens: a.Measures(states.MetricTokens), Cost: a.Measures(states.MetricCost),
	}
	var ae *asl.Error
	switch {
	case errors.Is(err, errParked):
		rec.Status = "waiting"
	case errors.As(err, &ae):
		rec.Status, rec.Error = "failed", string(ae.Name)
	case err != nil:
		rec.Status, rec.Error = "failed", "engine"
	}
	if f := r.x.hooks.StateAudited; f != nil {
		f(ctx, rec)
	}
	level := logLevels[a.LogLevel]
	if rec.Status == "failed" {
		level = max(level, slog.LevelWarn)
	}
	if a.LogLevel == states.AuditMinimal && rec.Status != "failed" || !r.x.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("execution", r.exec.ID), slog.String("workflow", r.exec.MachineName), slog.String("state", h.qualified()),
		slog.String("status", rec.Status), slog.Duration("took", rec.Duration),
	}
	if rec.Usage.Tokens > 0 || rec.Usage.Cost > 0 {
		attrs = append(attrs, slog.Int64("tokens", rec.Usage.Tokens), slog.Float64("cost", rec.Usage.Cost))
	}
	if ae != nil {
		attrs = append(attrs, slog.String("error", string(ae.Name)), slog.String("cause", r.secrets.text(ae.Cause)))
	} else if err != nil && rec.Status == "failed" {
		attrs = append(attrs, slog.String("error", r.secrets.text(err.Error())))
	}
	if a.LogLevel == states.AuditFull || a.LogLevel == states.AuditDebug {
		attrs = append(attrs, slog.String("input", r.secrets.viewText(input)))
		if res != nil && err == nil {
			attrs = append(attrs, slog.String("output", r.secrets.viewText(res.output)))
		}
	}
	r.x.log.LogAttrs(ctx, level, "state ended", attrs...)
}

// viewText returns doc as JSON text people may read: with the secrets
// replaced by their hashes.
func (s *secrets) viewText(doc any) string {
	b, err := jsonvalue.Marshal(s.view(doc))
	if err != nil {
		return "(not JSON: " + err.Error() + ")"
	}
	return string(b)
}

// maskError returns err with the secrets in its text masked, keeping an
// ASL error's name; err itself when there is nothing to mask.
func (s *secrets) maskError(err error) error {
	if s == nil || err == nil {
		return err
	}
	var ae *asl.Error
	if errors.As(err, &ae) {
		if c := s.text(ae.Cause); c != ae.Cause {
			return &asl.Error{Name: ae.Name, Cause: c}
		}
		return err
	}
	if t := s.text(err.Error()); t != err.Error() {
		return errors.New(t)
	}
	return err
}
