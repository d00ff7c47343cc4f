package lambdafn_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/cairnrun/cairn/shared/aws/lambdafn"
	"github.com/cairnrun/cairn/shared/contracts"
)

// A FIFO batch whose second record fails: it and the third are reported
// for redelivery, the third is not handled.
func ExampleSQSHandler() {
	handle := func(_ context.Context, m contracts.Message) error {
		fmt.Println("handling", m.SubmissionID)
		if m.SubmissionID == "sub-2" {
			return errors.New("model unavailable")
		}
		return nil
	}
	body := func(sub string) string {
		return `{"kind":"model","session_id":"s1","submission_id":"` + sub + `","step":0,"phase":"MODEL","version":1}`
	}
	ev := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: body("sub-1")},
		{MessageId: "m2", Body: body("sub-2")},
		{MessageId: "m3", Body: body("sub-3")},
	}}
	resp, _ := lambdafn.SQSHandler(contracts.QueueModel, handle, nil)(context.Background(), ev)
	fmt.Println(resp.BatchItemFailures)
	// Output:
	// handling sub-1
	// handling sub-2
	// [{m2} {m3}]
}
