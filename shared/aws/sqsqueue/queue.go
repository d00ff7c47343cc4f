package sqsqueue

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Options configures a Queue.
type Options struct {
	// URLs maps a queue name ("model", "tools", "commit", "model-dlq", …)
	// to its queue URL.
	URLs map[string]string
}

// Queue is contracts.Queue on SQS FIFO queues. It holds no state besides
// the client and the URL map, so it is safe for concurrent use and any
// number of processes may share the queues.
type Queue struct {
	client *sqs.Client
	urls   map[string]string
}

var (
	_ contracts.Queue            = (*Queue)(nil)
	_ contracts.VisibilitySetter = (*Queue)(nil)
)

// New returns a Queue over the queues in opts.URLs. Every URL must name a
// FIFO queue (end in ".fifo").
func New(client *sqs.Client, opts Options) (*Queue, error) {
	if client == nil {
		return nil, fmt.Errorf("sqsqueue: nil SQS client: %w", contracts.ErrInvalid)
	}
	urls := make(map[string]string, len(opts.URLs))
	for name, url := range opts.URLs {
		if name == "" || !strings.HasSuffix(url, ".fifo") {
			return nil, fmt.Errorf("sqsqueue: queue %q → %q: want a name and a FIFO queue URL: %w", name, url, contracts.ErrInvalid)
		}
		urls[name] = url
	}
	return &Queue{client: client, urls: urls}, nil
}

// url resolves a queue name; an unknown name is ErrInvalid.
func (q *Queue) url(queue string) (string, error) {
	u, ok := q.urls[queue]
	if !ok {
		return "", fmt.Errorf("unknown queue %q: %w", queue, contracts.ErrInvalid)
	}
	return u, nil
}

// receiptError maps the errors SQS returns for a receipt it will not
// honour to ErrNotFound; other errors pass through.
func receiptError(err error) error {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return err
	}
	switch ae.ErrorCode() {
	case "ReceiptHandleIsInvalid", "InvalidIdFormat", "MessageNotInflight",
		"AWS.SimpleQueueService.MessageNotInflight":
		return fmt.Errorf("%s: %w", ae.ErrorMessage(), contracts.ErrNotFound)
	case "InvalidParameterValue":
		// "Value … for parameter ReceiptHandle is invalid. Reason: The
		// receipt handle has expired."
		if strings.Contains(strings.ToLower(ae.ErrorMessage()), "receipt") {
			return fmt.Errorf("%s: %w", ae.ErrorMessage(), contracts.ErrNotFound)
		}
	}
	return err
}
