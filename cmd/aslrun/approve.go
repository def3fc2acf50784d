package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

func cmdApprove(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("approve", flag.ContinueOnError)
	decision := fs.String("decision", "", "the `OPTION` chosen (one the approval offers)")
	by := fs.String("by", "", "who decides (recorded as the approver)")
	comment := fs.String("comment", "", "a comment recorded with the decision")
	edit := fs.String("edit", "", "edited content for an Editable approval: JSON text, @FILE or -")
	which := fs.String("approval", "", "which pending approval (`ID` or state name) when several wait")
	digest := fs.String("digest", "", "refuse the decision unless the approval's digest is still `D`")
	af := newAgentFlags(fs, true)
	bf := newBucketFlags(fs, true)
	maxPayload := payloadFlag(fs)
	db := dbFlag(fs)
	pos, err := parseFlags(fs, "approve", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("approve: want exactly one execution ID, got %d (see \"aslrun approve --help\")", len(pos))
	}
	if *decision == "" {
		return usageErrorf("approve: --decision is required (one of the options the approval offers; `aslrun status %s` lists them)", pos[0])
	}
	if err := checkNameFlag("approve", "--by", *by); err != nil {
		return err
	}
	d := engine.Decision{Approval: *decision, Approver: *by, Comment: *comment, ApprovalID: *which, Digest: *digest}
	if *edit != "" {
		if d.Edit, err = c.readInput(*edit, inputLimit{bytes: noInputLimit}); err != nil {
			return usageErrorf("approve: --edit: %v", err)
		}
	}
	reg, _, _, err := af.load(c)
	if err != nil {
		return err
	}
	access, err := bf.access("approve")
	if err != nil {
		return err
	}
	h, err := c.open(ctx, *db, accessDecide, holderInfo{API: apiReads, Socket: socketPath(*db)})
	if err != nil {
		return err
	}
	defer h.close()
	var res *engine.Result
	if h.api != nil {
		if err := notThroughAPI(h, fs, "approve", "mock", "agents", "max-payload", "allow-file-buckets", "max-item-bytes", "max-listed-objects"); err != nil {
			return err
		}
		res, err = remoteDecide(ctx, h, pos[0], d)
		if err != nil {
			if err := remoteInterrupted(ctx, pos[0]); err != nil {
				return err
			}
			return engineError(err)
		}
	} else {
		cfg, err := executorConfig(h.st, nil, *maxPayload)
		if err != nil {
			return err
		}
		cfg.Buckets = access
		x := engine.New(cfg)
		// Children started without waiting (states:startExecution) run
		// on before the command exits.
		defer x.WaitDetached()
		reads := c.startReads(h.st, x, socketPath(*db))
		defer reads.stop(ctx)
		if res, err = x.Decide(ctx, pos[0], d, engine.ResumeOptions{Agents: reg}); err != nil {
			if err := interrupted(ctx, pos[0]); err != nil {
				return err
			}
			return engineError(err)
		}
	}
	printf(c.stderr, "execution: %s\n", pos[0])
	return printResult(c, res)
}

// pendingJSON is what run, resume, approve and status print of a pending
// approval.
func pendingJSON(pa engine.PendingApproval) map[string]any {
	options := make([]any, len(pa.Options))
	for i, o := range pa.Options {
		options[i] = o
	}
	v := map[string]any{"id": pa.ID, "state": pa.State, "prompt": pa.Prompt, "options": options, "digest": pa.Digest}
	if !pa.Deadline.IsZero() {
		v["deadline"] = pa.Deadline.UTC().Format(time.RFC3339)
	}
	if !pa.NextEscalation.IsZero() {
		v["escalatesAt"] = pa.NextEscalation.UTC().Format(time.RFC3339)
	}
	if pa.Editable != nil {
		v["editable"] = pa.Editable
	}
	return v
}

// isTerminal reports whether r is an interactive terminal (not merely a
// character device such as /dev/null).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// askDecision shows a pending approval on w and reads the decision from
// in: an option by name or number, then an optional comment. It asks
// again after an answer that is not an option, and fails at the end of
// the input.
func askDecision(in *bufio.Reader, w io.Writer, pa engine.PendingApproval) (engine.Decision, error) {
	prompt := pa.Prompt
	if s, ok := prompt.(string); ok {
		fmt.Fprintf(w, "\nApproval %s: %s\n", termSafe(pa.ID), termSafeLines(s))
	} else {
		text, _ := jsonvalue.MarshalIndent(prompt, "  ")
		fmt.Fprintf(w, "\nApproval %s:\n%s\n", termSafe(pa.ID), termSafeLines(string(text)))
	}
	if !pa.Deadline.IsZero() {
		fmt.Fprintf(w, "(decide before %s)\n", pa.Deadline.Local().Format(time.RFC1123))
	}
	for i, o := range pa.Options {
		fmt.Fprintf(w, "  %d) %s\n", i+1, termSafe(o))
	}
	for {
		fmt.Fprint(w, "decision: ")
		line, err := in.ReadString('\n')
		answer := strings.TrimSpace(line)
		if n, convErr := strconv.Atoi(answer); convErr == nil && n >= 1 && n <= len(pa.Options) {
			answer = pa.Options[n-1]
		}
		if slices.Contains(pa.Options, answer) {
			fmt.Fprint(w, "comment (optional): ")
			comment, _ := in.ReadString('\n')
			return engine.Decision{Approval: answer, ApprovalID: pa.ID, Digest: pa.Digest, Comment: strings.TrimSpace(comment),
				Approver: os.Getenv("USER")}, nil
		}
		if err != nil {
			return engine.Decision{}, fmt.Errorf("no decision given for approval %s: %w", pa.ID, err)
		}
		if answer != "" {
			fmt.Fprintf(w, "%q is not an option; answer %s or its number\n", answer, termSafe(strings.Join(pa.Options, ", ")))
		}
	}
}

// decideInteractively asks the terminal for the decisions an execution
// waits on and applies them with decide, until it ends or waits for
// something else.
func decideInteractively(c *cmdContext, res *engine.Result, decide func(engine.Decision) (*engine.Result, error)) (*engine.Result, error) {
	in := bufio.NewReader(c.stdin)
	for res.Status == engine.StatusWaiting && len(res.Approvals) > 0 {
		d, err := askDecision(in, c.stderr, res.Approvals[0])
		if err != nil {
			return res, nil // leave it waiting: printResult says how to approve
		}
		next, err := decide(d)
		if errors.Is(err, engine.ErrDecisionRefused) {
			printf(c.stderr, "refused: %v\n", err)
			continue
		}
		if err != nil {
			return nil, err
		}
		res = next
	}
	return res, nil
}
