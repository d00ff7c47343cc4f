package lambdafn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/contracts"
)

func record(i int) events.SQSMessage { return kindRecord(contracts.QueueModel, i) }

// kindRecord is record i (message id m<i>, submission sub-<i>, step i)
// carrying a message of kind.
func kindRecord(kind string, i int) events.SQSMessage {
	body, _ := json.Marshal(contracts.Message{
		Kind: kind, SessionID: "s1", SubmissionID: fmt.Sprint("sub-", i),
		Step: i, Phase: contracts.PhaseModel, Version: 1,
	})
	return events.SQSMessage{MessageId: fmt.Sprint("m", i), Body: string(body)}
}

func batch(bodies ...string) events.SQSEvent {
	var ev events.SQSEvent
	for i, b := range bodies {
		r := record(i + 1)
		if b != "" {
			r.Body = b
		}
		ev.Records = append(ev.Records, r)
	}
	return ev
}

func TestSQSHandler(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name string
		ev   events.SQSEvent
		// fail decides, per step (1-based record), what handle does.
		fail       func(step int) error
		ctx        func() (context.Context, context.CancelFunc)
		wantCalled []int
		wantFailed []string
	}{
		{
			name: "all succeed", ev: batch("", "", "", "", ""),
			wantCalled: []int{1, 2, 3, 4, 5},
		},
		{
			name: "third of five fails", ev: batch("", "", "", "", ""),
			fail:       func(step int) error { return map[bool]error{true: boom}[step == 3] },
			wantCalled: []int{1, 2, 3}, wantFailed: []string{"m3", "m4", "m5"},
		},
		{
			name: "first fails", ev: batch("", ""),
			fail:       func(int) error { return boom },
			wantCalled: []int{1}, wantFailed: []string{"m1", "m2"},
		},
		{
			name: "panic is a failure", ev: batch("", "", ""),
			fail: func(step int) error {
				if step == 2 {
					panic("handler bug")
				}
				return nil
			},
			wantCalled: []int{1, 2}, wantFailed: []string{"m2", "m3"},
		},
		{
			name: "malformed bodies are acknowledged", ev: batch("", "not json", `{"kind":"model"}`, ""),
			wantCalled: []int{1, 4},
		},
		{
			name: "another kind refused with the later records", ev: batch("", kindRecord(contracts.QueueTools, 2).Body, ""),
			wantCalled: []int{1}, wantFailed: []string{"m2", "m3"},
		},
		{
			name: "deadline near: nothing started", ev: batch("", ""),
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), lambdafn.DeadlineMargin/2)
			},
			wantFailed: []string{"m1", "m2"},
		},
		{
			name: "deadline near after a slow record", ev: batch("", "", ""),
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithDeadline(context.Background(), time.Now().Add(lambdafn.DeadlineMargin+time.Second))
			},
			fail: func(step int) error {
				if step == 1 {
					time.Sleep(1200 * time.Millisecond) // the work itself (fake clock)
				}
				return nil
			},
			wantCalled: []int{1}, wantFailed: []string{"m2", "m3"},
		},
	}
	for _, tc := range tests {
		// In a synctest bubble the deadlines and the slow record's sleep
		// run on the fake clock: no real waiting.
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var called []int
				handle := func(ctx context.Context, m contracts.Message) error {
					called = append(called, m.Step)
					if tc.fail != nil {
						return tc.fail(m.Step)
					}
					return nil
				}
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if tc.ctx != nil {
					ctx, cancel = tc.ctx()
				}
				defer cancel()
				resp, err := lambdafn.SQSHandler(contracts.QueueModel, handle, slog.New(slog.DiscardHandler))(ctx, tc.ev)
				if err != nil {
					t.Fatalf("handler error = %v, want nil (failures travel as batch item failures)", err)
				}
				var failed []string
				for _, f := range resp.BatchItemFailures {
					failed = append(failed, f.ItemIdentifier)
				}
				if !reflect.DeepEqual(called, tc.wantCalled) {
					t.Errorf("handled steps %v, want %v", called, tc.wantCalled)
				}
				if !reflect.DeepEqual(failed, tc.wantFailed) {
					t.Errorf("batch item failures %v, want %v", failed, tc.wantFailed)
				}
			})
		})
	}
}

// The response serialises to the shape Lambda expects from a partial
// batch response.
func TestSQSHandlerResponseJSON(t *testing.T) {
	h := lambdafn.SQSHandler(contracts.QueueModel, func(context.Context, contracts.Message) error { return errors.New("x") }, nil)
	resp, _ := h(context.Background(), batch(""))
	got, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"batchItemFailures":[{"itemIdentifier":"m1"}]}`; string(got) != want {
		t.Errorf("response JSON = %s, want %s", got, want)
	}
}
