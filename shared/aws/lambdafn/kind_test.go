package lambdafn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/contracts"
)

// Each phase function serves only its own queue's kind: a message of
// another kind is refused with an error line and reported as a failure,
// with every later record, so SQS keeps it until its DLQ takes it.
func TestSQSHandlerKind(t *testing.T) {
	const (
		model, tools, commit, workflow = contracts.QueueModel, contracts.QueueTools, contracts.QueueCommit, contracts.QueueWorkflow
	)
	tests := []struct {
		name string
		kind string // the function's
		// records are the batch, m1…mn: a message of that kind, or
		// (starting with "!") the raw body that follows.
		records     []string
		wantHandled []string
		wantFailed  []string
		wantRefused []string // message ids named by a refusal line
	}{
		{name: "model handles model", kind: model, records: []string{model, model}, wantHandled: []string{"m1", "m2"}},
		{name: "tools handles tools", kind: tools, records: []string{tools}, wantHandled: []string{"m1"}},
		{name: "commit handles commit", kind: commit, records: []string{commit}, wantHandled: []string{"m1"}},
		{name: "workflow handles workflow", kind: workflow, records: []string{workflow}, wantHandled: []string{"m1"}},
		{
			name: "model refuses tools; later records fail with it", kind: model, records: []string{model, tools, model},
			wantHandled: []string{"m1"}, wantFailed: []string{"m2", "m3"}, wantRefused: []string{"m2"},
		},
		{
			name: "workflow refuses a phase message first in the batch", kind: workflow, records: []string{model, workflow},
			wantFailed: []string{"m1", "m2"}, wantRefused: []string{"m1"},
		},
		{
			name: "commit refuses workflow as the last record", kind: commit, records: []string{commit, commit, workflow},
			wantHandled: []string{"m1", "m2"}, wantFailed: []string{"m3"}, wantRefused: []string{"m3"},
		},
		{
			name: "a body that is not a message is still acknowledged", kind: tools, records: []string{tools, "!not json", tools},
			wantHandled: []string{"m1", "m3"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ev events.SQSEvent
			kindOf := map[string]string{}
			for i, r := range tc.records {
				rec := kindRecord(r, i+1)
				if body, ok := strings.CutPrefix(r, "!"); ok {
					rec.Body = body
				}
				rec.Attributes = map[string]string{"ApproximateReceiveCount": "2"}
				kindOf[rec.MessageId] = r
				ev.Records = append(ev.Records, rec)
			}
			var handled []string
			handle := func(_ context.Context, m contracts.Message) error {
				handled = append(handled, "m"+strings.TrimPrefix(m.SubmissionID, "sub-"))
				return nil
			}
			var buf bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&buf, nil))

			resp, err := lambdafn.SQSHandler(tc.kind, handle, log)(context.Background(), ev)
			if err != nil {
				t.Fatalf("handler error = %v, want nil", err)
			}
			var failed []string
			for _, f := range resp.BatchItemFailures {
				failed = append(failed, f.ItemIdentifier)
			}
			if !reflect.DeepEqual(handled, tc.wantHandled) {
				t.Errorf("handled %v, want %v", handled, tc.wantHandled)
			}
			if !reflect.DeepEqual(failed, tc.wantFailed) {
				t.Errorf("batch item failures %v, want %v", failed, tc.wantFailed)
			}

			var refused []string
			for _, line := range logLines(t, &buf) {
				msg, _ := line["msg"].(string)
				if !strings.HasPrefix(msg, "refusing") {
					continue
				}
				id, _ := line["message_id"].(string)
				refused = append(refused, id)
				want := map[string]any{
					"level": "ERROR", "function_kind": tc.kind, "message_kind": kindOf[id], "message_id": id,
					"session_id": "s1", "submission_id": "sub-" + strings.TrimPrefix(id, "m"), "receive_count": "2",
				}
				for k, v := range want {
					if line[k] != v {
						t.Errorf("refusal line %s = %v, want %v (line %v)", k, line[k], v, line)
					}
				}
				for _, says := range []string{"another kind", "batch item failure", "DLQ", "maxReceiveCount"} {
					if !strings.Contains(msg, says) {
						t.Errorf("refusal message %q does not say %q", msg, says)
					}
				}
			}
			if !reflect.DeepEqual(refused, tc.wantRefused) {
				t.Errorf("refusal lines for %v, want %v (log %s)", refused, tc.wantRefused, buf.String())
			}
		})
	}
}

func TestSQSHandlerNeedsKind(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("SQSHandler with no kind did not panic")
		}
	}()
	lambdafn.SQSHandler("", func(context.Context, contracts.Message) error { return nil }, nil)
}

// logLines parses JSON log output, one object a line.
func logLines(t *testing.T, out *bytes.Buffer) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if !strings.HasPrefix(l, "{") {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	return lines
}
