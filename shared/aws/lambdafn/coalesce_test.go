package lambdafn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/contracts"
)

// wakeRecord is a workflow wake-up of run (message id id); a schedule's
// firing when schedule is set.
func wakeRecord(id, run, schedule string) events.SQSMessage {
	body, _ := json.Marshal(contracts.Message{Kind: contracts.QueueWorkflow, SessionID: run, SubmissionID: run, Nonce: id, ScheduleID: schedule})
	return events.SQSMessage{MessageId: id, Body: string(body)}
}

// byRun coalesces wake-ups of one run; firings have no key.
func byRun(m contracts.Message) string {
	if m.ScheduleID != "" {
		return ""
	}
	return m.SubmissionID
}

// Of a batch's records with one key only the last is handled; the others
// are acknowledged with it. Records without a key are each handled. A
// failure of the last one reports it and every later record — the earlier
// ones it stood for are not redelivered, its redelivery does their work.
func TestCoalesceHandlesTheLastOfAKey(t *testing.T) {
	ev := events.SQSEvent{Records: []events.SQSMessage{
		wakeRecord("a1", "run-a", ""), wakeRecord("b1", "run-b", ""), wakeRecord("f1", "sch", "sch"),
		wakeRecord("a2", "run-a", ""), wakeRecord("f2", "sch", "sch"), wakeRecord("a3", "run-a", ""),
	}}
	for _, tc := range []struct {
		name       string
		fail       string
		wantCalled []string
		wantFailed []string
	}{
		{name: "all succeed", wantCalled: []string{"b1", "f1", "f2", "a3"}},
		{name: "the last of a key fails", fail: "a3", wantCalled: []string{"b1", "f1", "f2", "a3"}, wantFailed: []string{"a3"}},
		{name: "a record without a key fails", fail: "f1", wantCalled: []string{"b1", "f1"}, wantFailed: []string{"f1", "a2", "f2", "a3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var called []string
			h := lambdafn.SQSHandler(contracts.QueueWorkflow, func(_ context.Context, m contracts.Message) error {
				called = append(called, m.Nonce)
				if m.Nonce == tc.fail {
					return errors.New("boom")
				}
				return nil
			}, nil, lambdafn.Coalesce(byRun))
			resp, err := h(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			var failed []string
			for _, f := range resp.BatchItemFailures {
				failed = append(failed, f.ItemIdentifier)
			}
			if !reflect.DeepEqual(called, tc.wantCalled) || fmt.Sprint(failed) != fmt.Sprint(tc.wantFailed) {
				t.Fatalf("handled %v, failed %v; want %v, %v", called, failed, tc.wantCalled, tc.wantFailed)
			}
		})
	}
}
