package contracts

import (
	"context"
	"time"
)

// Queue names, one per phase (each with a dead-letter queue Name+"-dlq").
const (
	QueueModel  = "model"
	QueueTools  = "tools"
	QueueCommit = "commit"
)

// DLQ returns the dead-letter queue of a queue.
func DLQ(queue string) string { return queue + "-dlq" }

// Message is a wake-up, never an instruction: the handler re-reads the
// journal and acts on what it says.
type Message struct {
	Kind         string `json:"kind"` // the queue it targets: model | tools | commit | workflow
	SessionID    string `json:"session_id"`
	SubmissionID string `json:"submission_id"`
	Step         int    `json:"step"`
	Phase        Phase  `json:"phase"`
	Version      int64  `json:"version"`
	// Nonce distinguishes deliberate re-drives (repair) of the same state.
	Nonce string `json:"nonce,omitempty"`
	// ScheduleID and ScheduledAt: a schedule firing on the workflow queue
	// (EventBridge Scheduler fills them in; the run id derives from both).
	ScheduleID  string    `json:"schedule_id,omitempty"`
	ScheduledAt time.Time `json:"scheduled_at,omitempty"`
	// Trace is the W3C traceparent of the span that sent it: the next
	// phase's span continues the turn's trace (not part of DedupID: two
	// senders of one state are still one message).
	Trace string `json:"traceparent,omitempty"`
	// SentAt is when it was sent (the sender's clock; the queue-age
	// metric), not part of DedupID either.
	SentAt time.Time `json:"sent_at,omitzero"`
	// Orchestration is what the turn's handlers used so far, carried from
	// run to run until the turn's terminal write records it (shared/meter;
	// the AWS backend), not part of DedupID.
	Orchestration *Orchestration `json:"orchestration,omitempty"`
}

// Delivery is a received message with its receipt.
type Delivery struct {
	Message      Message
	ID           string
	Receipt      string
	ReceiveCount int
}

// Queue has SQS FIFO semantics as cairn uses them:
//   - Send groups by Message.SessionID (MessageGroupId) and deduplicates on
//     DedupID (submission/step/phase/version[/nonce]) within a window: a
//     duplicate send is accepted and dropped.
//   - Receive returns up to max visible messages and hides them for
//     visibility; within one group, no message is delivered while an earlier
//     one of that group is in flight, so a group is processed in order.
//   - Delete acknowledges; Release makes an in-flight message visible again
//     (a batch item failure).
//   - A message received more than the configured maximum is moved to the
//     queue's DLQ (DLQ(queue)), which is itself receivable.
type Queue interface {
	Send(ctx context.Context, queue string, m Message) error
	Receive(ctx context.Context, queue string, max int, visibility time.Duration) ([]Delivery, error)
	Delete(ctx context.Context, queue string, receipt string) error
	Release(ctx context.Context, queue string, receipt string) error
}

// VisibilitySetter is implemented by queues whose in-flight messages can be
// hidden for a chosen time (SQS ChangeMessageVisibility). A Lambda handler
// keeps the message it works on hidden only a little longer than its next
// heartbeat, and hides a failed one for a short backoff, so a crash, a
// timeout or a failure redelivers it within seconds instead of after the
// queue's visibility timeout — during which its FIFO group (the session)
// would get nothing else, not even repair's re-drive. d = 0 makes the
// message visible now. A receipt no longer in flight is ErrNotFound.
type VisibilitySetter interface {
	SetVisibility(ctx context.Context, queue, receipt string, d time.Duration) error
}

// Claimer is implemented by queues that can hand a message to its sender
// as already received (the embedded queue: the sender's worker is in the
// same process as the queue). SendClaimed is Send, except that when the
// message is accepted (not a duplicate) and no other message of its group
// is on queue, it is stored in flight — hidden for visibility, received
// once, under the returned receipt — and ok is true: the sender handles it
// next without a receive, and if it dies first the message reappears after
// visibility like any received one. Otherwise the message is stored
// visible (ok false), as Send would. Inside a Batch, the delivery is only
// real once the batch commits.
type Claimer interface {
	SendClaimed(ctx context.Context, queue string, m Message, visibility time.Duration) (d Delivery, ok bool, err error)
}

// Forwarder is implemented by queues that can also consume the message a
// handler runs for in the same write as its next phase's claimed send (the
// embedded queue: the row in flight becomes the next message). Forward is
// SendClaimed, except that when m is accepted, the message holding receipt
// on from is still in flight under it, and no other message of m's group
// is on queue, that message is consumed and m takes its place, in flight
// under d.Receipt: ok and consumed are both true, and there is nothing to
// delete. Otherwise it is SendClaimed, and the message holding receipt is
// untouched (consumed false). Inside a Batch both are only real once the
// batch commits.
type Forwarder interface {
	Forward(ctx context.Context, from, receipt, queue string, m Message, visibility time.Duration) (d Delivery, ok, consumed bool, err error)
}

// DedupID is the FIFO deduplication id: submission/step/phase/version, plus
// the nonce of a deliberate re-drive.
func (m Message) DedupID() string {
	id := m.SubmissionID + "/" + itoa(int64(m.Step)) + "/" + string(m.Phase) + "/" + itoa(m.Version) + "/" + m.Kind
	if m.Nonce != "" {
		id += "/" + m.Nonce
	}
	return id
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
