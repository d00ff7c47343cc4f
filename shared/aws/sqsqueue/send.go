package sqsqueue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairnrun/cairn/shared/contracts"
)

// maxIDLen is SQS's limit on MessageGroupId and MessageDeduplicationId.
const maxIDLen = 128

// Send enqueues m on queue with MessageGroupId = m.SessionID and
// MessageDeduplicationId = m.DedupID(). SQS accepts and drops a duplicate
// sent within its 5-minute deduplication window.
func (q *Queue) Send(ctx context.Context, queue string, m contracts.Message) error {
	url, err := q.url(queue)
	if err != nil {
		return fmt.Errorf("sending %s: %w", m.DedupID(), err)
	}
	if m.SessionID == "" {
		return fmt.Errorf("sending %s to queue %s: empty session id (group): %w", m.DedupID(), queue, contracts.ErrInvalid)
	}
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("sending %s to queue %s: %w", m.DedupID(), queue, err)
	}
	_, err = q.client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:               aws.String(url),
		MessageBody:            aws.String(string(body)),
		MessageGroupId:         aws.String(fifoID(m.SessionID)),
		MessageDeduplicationId: aws.String(fifoID(m.DedupID())),
	})
	if err != nil {
		return fmt.Errorf("sending %s to queue %s: %w", m.DedupID(), queue, err)
	}
	return nil
}

// fifoID returns s if SQS accepts it as a group or deduplication id (1–128
// characters, printable ASCII without space), else the sha256 hex of s:
// deterministic, so the same s always maps to the same id.
func fifoID(s string) string {
	ok := s != "" && len(s) <= maxIDLen
	for i := 0; ok && i < len(s); i++ {
		ok = s[i] > ' ' && s[i] <= '~'
	}
	if ok {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
