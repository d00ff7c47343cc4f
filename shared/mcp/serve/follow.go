package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnrun/cairn/shared/contracts"
)

// follow waits up to wait for the turn to end or park, reporting each of
// its events — from its first, so a client that comes back sees the whole
// turn — as a progress notification (when the client asked for
// progress), and returns the turn as it then is: done, parked with the
// approvals to decide, or still running (a handle for get_result).
func (s *tools) follow(ctx context.Context, req *sdk.CallToolRequest, sessionID, subID string, wait time.Duration) (*sdk.CallToolResult, Turn, error) {
	deadline := time.Now().Add(wait)
	p := progress{req: req}
	var after int64
	for {
		page, err := s.events(ctx, sessionID, subID, after, max(0, min(time.Until(deadline), PollWait)))
		if err != nil {
			return nil, Turn{}, err
		}
		after = page.Next
		parked := false
		for _, ev := range page.Events {
			p.report(ctx, ev)
			parked = parked || ev.Type == contracts.EventApprovalNeeded
		}
		end := page.Done || time.Until(deadline) <= 0
		if !end && !parked {
			continue
		}
		sub, err := s.submission(ctx, sessionID, subID)
		if err != nil {
			return nil, Turn{}, err
		}
		// An approval_needed already decided (a turn that went on) does not
		// end the wait; a pending one does.
		if t := turnOf(sub); end || t.Done || len(t.Approvals) > 0 {
			return textResult(t.summary()), t, nil
		}
	}
}

// followRun waits up to wait for a workflow run to end.
func (s *tools) followRun(ctx context.Context, req *sdk.CallToolRequest, run contracts.WorkflowRun, wait time.Duration) (*sdk.CallToolResult, Run, error) {
	deadline := time.Now().Add(wait)
	p := progress{req: req}
	last := ""
	for {
		r := Run{WorkflowID: run.WorkflowID, RunID: run.ID, Status: string(run.Status), Done: run.Status.Terminal(), Result: decoded(run.Result), Error: run.Error}
		if msg := fmt.Sprintf("run %s: %s after %d evaluations", run.ID, run.Status, run.Evaluations); msg != last {
			p.say(ctx, msg)
			last = msg
		}
		left := time.Until(deadline)
		if r.Done || left <= 0 {
			text := fmt.Sprintf("workflow %s run %s: %s", r.WorkflowID, r.RunID, r.Status)
			switch {
			case r.Error != "":
				text += ": " + r.Error
			case len(run.Result) > 0:
				text += "\n" + string(run.Result)
			case !r.Done:
				text += " (still running: call run_workflow with this run_id to wait again)"
			}
			return textResult(text), r, nil
		}
		t := time.NewTimer(min(left, RunPoll))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, Run{}, ctx.Err()
		case <-t.C:
		}
		var err error
		if run, err = s.run(ctx, run.WorkflowID, run.ID); err != nil {
			return nil, Run{}, err
		}
	}
}

// turnOf is sub as the tools return it.
func turnOf(sub contracts.Submission) Turn {
	t := Turn{SessionID: sub.SessionID, SubmissionID: sub.ID, Phase: string(sub.Phase), Step: sub.Step,
		Done: sub.Phase.Terminal(), Result: sub.Result, Error: sub.Error, Usage: sub.Usage}
	if !sub.ParkedAt.IsZero() && !t.Done {
		for _, a := range sub.Approvals {
			if a.Decision == "" {
				t.Approvals = append(t.Approvals, Approval{ID: a.ID, Tool: a.Tool, Input: decoded(a.Input)})
			}
		}
	}
	return t
}

// summary is the turn as text, for clients that show only text content.
func (t Turn) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "session %s, turn %s: %s", t.SessionID, t.SubmissionID, t.Phase)
	switch {
	case t.Done && t.Error != "":
		fmt.Fprintf(&b, ": %s", t.Error)
	case t.Done:
		fmt.Fprintf(&b, "\n\n%s", t.Result)
	case len(t.Approvals) > 0:
		b.WriteString(" — waiting for approval:")
		for _, a := range t.Approvals {
			in, _ := json.Marshal(a.Input)
			fmt.Fprintf(&b, "\n- approval %s: %s %s", a.ID, a.Tool, clip(string(in), 512))
		}
		b.WriteString("\ndecide each with approve (session_id, submission_id, approval_id, decision allow|deny).")
	default:
		fmt.Fprintf(&b, " at step %d, still running: call get_result with session_id and submission_id to wait again.", t.Step+1)
	}
	return b.String()
}

// progress reports a waiting tool's progress, when the client gave a
// progress token (else it says nothing). Progress counts what was
// reported, so it only grows.
type progress struct {
	req  *sdk.CallToolRequest
	sent float64
}

func (p *progress) report(ctx context.Context, ev contracts.Event) {
	switch ev.Type {
	case contracts.EventTextDelta:
		p.say(ctx, fmt.Sprintf("step %d: %s", ev.Step+1, clip(ev.Text, 200)))
	case contracts.EventToolStarted:
		p.say(ctx, fmt.Sprintf("step %d: running %s", ev.Step+1, ev.Tool))
	case contracts.EventToolFinished, contracts.EventToolDenied, contracts.EventToolInterrupted:
		p.say(ctx, fmt.Sprintf("step %d: %s %s", ev.Step+1, ev.Tool, strings.TrimPrefix(ev.Type, "tool_")))
	case contracts.EventStep:
		p.say(ctx, fmt.Sprintf("step %d began", ev.Step+1))
	case contracts.EventApprovalNeeded:
		p.say(ctx, fmt.Sprintf("step %d: %s waits for approval %s", ev.Step+1, ev.Tool, ev.ApprovalID))
	default:
		msg := ev.Type
		if ev.Text != "" {
			msg += ": " + clip(ev.Text, 200)
		}
		p.say(ctx, fmt.Sprintf("step %d: %s", ev.Step+1, msg))
	}
}

func (p *progress) say(ctx context.Context, msg string) {
	if p.req == nil || p.req.Session == nil || p.req.Params == nil {
		return
	}
	tok := p.req.Params.GetProgressToken()
	if tok == nil {
		return
	}
	p.sent++
	// Best effort: a client that went away does not fail the tool.
	_ = p.req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: p.sent, Message: msg})
}

// decoded is JSON as a value (nil for none or for what does not decode).
func decoded(raw json.RawMessage) any {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
