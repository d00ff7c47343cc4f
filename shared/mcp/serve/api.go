package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// MaxAnswer bounds what one API answer may hold (a page is far smaller).
const MaxAnswer = 16 << 20

// apiError is an error answer of the API: its status and its JSON
// {error:{code,message}}.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("cairn API: %d %s: %s", e.Status, e.Code, e.Message)
}

// call makes one API request: body as JSON (nil = none), the answer into
// out (nil = dropped).
func (s *tools) call(ctx context.Context, method, path string, body any, hdr map[string]string, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := s.cfg.API(req)
	if err != nil {
		return fmt.Errorf("cairn API unreachable: %s %s: %w", method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer))
	if err != nil {
		return fmt.Errorf("cairn API: %s %s: reading the answer: %w", method, req.URL.Path, err)
	}
	if resp.StatusCode >= 300 {
		var eb struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(data, &eb) != nil || eb.Error.Code == "" {
			eb.Error.Code, eb.Error.Message = "http_error", http.StatusText(resp.StatusCode)
		}
		return &apiError{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("cairn API: %s %s: decoding the answer: %w", method, req.URL.Path, err)
		}
	}
	return nil
}

func sessionPath(id string) string { return "/v1/sessions/" + url.PathEscape(id) }

func submissionPath(sessionID, subID string) string {
	return sessionPath(sessionID) + "/submissions/" + url.PathEscape(subID)
}

func (s *tools) createSession(ctx context.Context, spec contracts.SessionSpec) (contracts.Session, error) {
	var out contracts.Session
	return out, s.call(ctx, "POST", "/v1/sessions", spec, nil, &out)
}

func (s *tools) submit(ctx context.Context, sessionID, prompt, key string) (contracts.Submission, error) {
	var out contracts.Submission
	return out, s.call(ctx, "POST", sessionPath(sessionID)+"/submissions", map[string]string{"prompt": prompt},
		map[string]string{"Idempotency-Key": key}, &out)
}

func (s *tools) submission(ctx context.Context, sessionID, subID string) (contracts.Submission, error) {
	var out contracts.Submission
	return out, s.call(ctx, "GET", submissionPath(sessionID, subID), nil, nil, &out)
}

type eventsPage struct {
	Events []contracts.Event `json:"events"`
	Next   int64             `json:"next"`
	Phase  contracts.Phase   `json:"phase"`
	Done   bool              `json:"done"`
}

func (s *tools) events(ctx context.Context, sessionID, subID string, after int64, wait time.Duration) (eventsPage, error) {
	var out eventsPage
	path := fmt.Sprintf("%s/events?after=%d&wait=%dms", submissionPath(sessionID, subID), after, wait.Milliseconds())
	return out, s.call(ctx, "GET", path, nil, nil, &out)
}

func (s *tools) decide(ctx context.Context, sessionID, approvalID string, d contracts.Decision, reason string) (contracts.Approval, error) {
	var out contracts.Approval
	return out, s.call(ctx, "POST", sessionPath(sessionID)+"/approvals/"+url.PathEscape(approvalID),
		map[string]string{"decision": string(d), "reason": reason}, nil, &out)
}

func (s *tools) cancel(ctx context.Context, sessionID, subID, reason string) (contracts.Submission, error) {
	var out contracts.Submission
	return out, s.call(ctx, "POST", submissionPath(sessionID, subID)+"/cancel", map[string]string{"reason": reason}, nil, &out)
}

func runPath(workflowID, runID string) string {
	return "/v1/workflows/" + url.PathEscape(workflowID) + "/runs/" + url.PathEscape(runID)
}

func (s *tools) startRun(ctx context.Context, workflowID string, input json.RawMessage, key string) (contracts.WorkflowRun, error) {
	var out contracts.WorkflowRun
	hdr := map[string]string{}
	if key != "" {
		hdr["Idempotency-Key"] = key
	}
	return out, s.call(ctx, "POST", "/v1/workflows/"+url.PathEscape(workflowID)+"/runs", struct {
		Input json.RawMessage `json:"input,omitempty"`
	}{input}, hdr, &out)
}

func (s *tools) run(ctx context.Context, workflowID, runID string) (contracts.WorkflowRun, error) {
	var out contracts.WorkflowRun
	return out, s.call(ctx, "GET", runPath(workflowID, runID), nil, nil, &out)
}
