package lambdafn_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/contracts"
)

// hider passes every SetVisibility call on as "queue:receipt=duration".
type hider struct{ calls chan string }

func (h *hider) SetVisibility(_ context.Context, queue, receipt string, d time.Duration) error {
	h.calls <- fmt.Sprintf("%s:%s=%v", queue, receipt, d)
	return nil
}

// take waits for the next n calls.
func (h *hider) take(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = <-h.calls
	}
	return out
}

func receipts(recs []events.SQSMessage, receiveCounts ...string) []events.SQSMessage {
	for i := range recs {
		recs[i].ReceiptHandle = "r" + fmt.Sprint(i+1)
		recs[i].Attributes = map[string]string{"ApproximateReceiveCount": receiveCounts[i]}
	}
	return recs
}

// Every record is hidden for Hold on arrival and again on each heartbeat
// while unfinished; a failure hides the failed record and the later ones
// for a backoff doubling with their receive count; finished ones are left.
func TestVisibilityKeepsRecordsBrieflyHidden(t *testing.T) {
	h := &hider{calls: make(chan string, 64)}
	ticks := make(chan time.Time)
	inFirst, releaseFirst := make(chan struct{}), make(chan struct{})
	handle := func(_ context.Context, m contracts.Message) error {
		switch m.SubmissionID {
		case "sub-1":
			close(inFirst)
			<-releaseFirst
			return nil
		case "sub-2":
			return errors.New("model overloaded")
		}
		t.Errorf("record after the failed one was handled: %s", m.SubmissionID)
		return nil
	}
	fn := lambdafn.SQSHandler(contracts.QueueModel, handle, nil, lambdafn.WithVisibility(h, lambdafn.Visibility{
		Ticks: func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} },
	}))
	ev := events.SQSEvent{Records: receipts([]events.SQSMessage{record(1), record(2), record(3)}, "1", "1", "3")}
	type result struct {
		resp events.SQSEventResponse
		err  error
	}
	out := make(chan result, 1)
	go func() {
		resp, err := fn(context.Background(), ev)
		out <- result{resp, err}
	}()
	<-inFirst
	if got, want := h.take(3), []string{"model:r1=30s", "model:r2=30s", "model:r3=30s"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("on arrival: %v, want %v", got, want)
	}
	ticks <- time.Time{}
	if got, want := h.take(3), []string{"model:r1=30s", "model:r2=30s", "model:r3=30s"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("on the heartbeat: %v, want %v", got, want)
	}
	close(releaseFirst)
	r := <-out
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := ids(r.resp); !reflect.DeepEqual(got, []string{"m2", "m3"}) {
		t.Fatalf("failures %v, want m2 and m3", got)
	}
	// r2 received once: the minimum backoff; r3 received 3 times: doubled twice.
	if got, want := h.take(2), []string{"model:r2=2s", "model:r3=8s"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after the failure: %v, want %v", got, want)
	}
	if len(h.calls) != 0 {
		t.Fatalf("more calls after the batch ended: %d", len(h.calls))
	}
}

// A queue that cannot set visibility leaves the option off.
func TestWithVisibilityNeedsAVisibilitySetter(t *testing.T) {
	fn := lambdafn.SQSHandler(contracts.QueueModel, func(context.Context, contracts.Message) error { return nil }, nil,
		lambdafn.WithVisibility(struct{}{}, lambdafn.Visibility{}))
	if resp, err := fn(context.Background(), events.SQSEvent{Records: []events.SQSMessage{record(1)}}); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%+v, %v", resp, err)
	}
}

func ids(resp events.SQSEventResponse) []string {
	var out []string
	for _, f := range resp.BatchItemFailures {
		out = append(out, f.ItemIdentifier)
	}
	return out
}
