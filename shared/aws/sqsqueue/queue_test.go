package sqsqueue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
)

// offline is a client that is never called: the errors below are decided
// before any request.
func offline() *sqs.Client {
	return sqs.New(sqs.Options{Region: "us-east-1"})
}

func TestNewRejects(t *testing.T) {
	tests := []struct {
		name   string
		client *sqs.Client
		urls   map[string]string
	}{
		{"nil client", nil, nil},
		{"standard queue", offline(), map[string]string{"model": "http://x/1/q"}},
		{"empty name", offline(), map[string]string{"": "http://x/1/q.fifo"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.client, Options{URLs: tc.urls}); !errors.Is(err, contracts.ErrInvalid) {
				t.Errorf("New = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestUnknownQueueIsInvalid(t *testing.T) {
	q, err := New(offline(), Options{URLs: map[string]string{"model": "http://x/1/q.fifo"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m := message("s", "sub")
	for name, err := range map[string]error{
		"Send":          q.Send(ctx, "tools", m),
		"Send no group": q.Send(ctx, "model", contracts.Message{SubmissionID: "x"}),
		"Delete":        q.Delete(ctx, "tools", "r"),
		"Release":       q.Release(ctx, "tools", "r"),
	} {
		if !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("%s = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := q.Receive(ctx, "model-dlq", 1, time.Second); !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("Receive = %v, want ErrInvalid", err)
	}
}

func TestFifoID(t *testing.T) {
	long := strings.Repeat("a", 129)
	tests := []struct {
		in     string
		hashed bool
	}{
		{"sub_1/0/MODEL/1/model", false},
		{"sub_1/0/MODEL/1/model/!#$%&'()*+,-.:;<=>?@[]^_`{|}~", false},
		{strings.Repeat("a", 128), false},
		{long, true},
		{"with space", true},
		{"naïve", true},
		{"", true},
	}
	for _, tc := range tests {
		got := fifoID(tc.in)
		if hashed := got != tc.in; hashed != tc.hashed {
			t.Errorf("fifoID(%q) = %q, hashed %v, want %v", tc.in, got, hashed, tc.hashed)
		}
		if len(got) > maxIDLen || got != fifoID(tc.in) {
			t.Errorf("fifoID(%q) = %q: too long or not deterministic", tc.in, got)
		}
	}
}

func TestSeconds(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want int32
	}{
		{-time.Second, 0}, {0, 0}, {time.Nanosecond, 1}, {time.Second, 1},
		{1500 * time.Millisecond, 2}, {30 * time.Second, 30}, {13 * time.Hour, 43200},
	}
	for _, tc := range tests {
		if got := seconds(tc.in); got != tc.want {
			t.Errorf("seconds(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestCreateQueuesIdempotent(t *testing.T) {
	c := client(t)
	ctx := awstest.Context(t)
	prefix := awstest.Name(t, "cq")
	first, err := CreateQueues(ctx, c, prefix, 4, 30*time.Second)
	if err != nil {
		t.Fatalf("CreateQueues: %v", err)
	}
	t.Cleanup(func() {
		for _, u := range first {
			deleteQueues(c, u)
		}
	})
	if len(first) != 8 {
		t.Fatalf("CreateQueues returned %v, want 8 queues", first)
	}
	for _, name := range []string{"model", "tools", "commit"} {
		for _, key := range []string{name, contracts.DLQ(name)} {
			if want := "/" + prefix + "-" + key + ".fifo"; !strings.HasSuffix(first[key], want) {
				t.Errorf("URL of %s = %q, want suffix %q", key, first[key], want)
			}
		}
	}
	// Again, with another visibility: same queues, attributes converge.
	second, err := CreateQueues(ctx, c, prefix, 4, 45*time.Second)
	if err != nil {
		t.Fatalf("CreateQueues again: %v", err)
	}
	for k, u := range first {
		if second[k] != u {
			t.Errorf("second CreateQueues: %s = %q, want %q", k, second[k], u)
		}
	}
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(first["model"]), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := attrs.Attributes
	if a["FifoQueue"] != "true" || a["VisibilityTimeout"] != "45" ||
		!strings.Contains(a["RedrivePolicy"], prefix+"-model-dlq.fifo") || !strings.Contains(a["RedrivePolicy"], "4") {
		t.Errorf("model queue attributes = %v, want FIFO, visibility 45, redrive to the model DLQ after 4", a)
	}
}

func TestDedupWhileQueued(t *testing.T) {
	c := client(t)
	ctx := awstest.Context(t)
	base := awstest.Name(t, "dedup")
	q := pair(t, c, base, 3)
	m := message("s1", "sub-1")
	long := message("s1", strings.Repeat("x", 200)) // dedup id hashed
	for _, msg := range []contracts.Message{m, m, long, long} {
		if err := q.Send(ctx, base, msg); err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
	redrive := m
	redrive.Nonce = "redrive-1"
	if err := q.Send(ctx, base, redrive); err != nil {
		t.Fatalf("Send: %v", err)
	}
	var got []contracts.Message
	for range 3 {
		ds, err := q.Receive(ctx, base, 10, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			got = append(got, d.Message)
			if err := q.Delete(ctx, base, d.Receipt); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(got) != 3 || got[0] != m || got[1] != long || got[2] != redrive {
		t.Errorf("delivered %+v, want the message, the long one and the re-drive once each, in order", got)
	}
}

// TestDeadLetter is the conformance DeadLetter check without its
// ReceiveCount-reset expectation: after maxReceives receives the message
// moves to the DLQ, the group is unblocked, and the DLQ is receivable.
func TestDeadLetter(t *testing.T) {
	c := client(t)
	ctx := awstest.Context(t)
	base := awstest.Name(t, "dl")
	const maxReceives = 2
	q := pair(t, c, base, maxReceives)
	poison, next := message("g", "poison"), message("g", "next")
	for _, m := range []contracts.Message{poison, next} {
		if err := q.Send(ctx, base, m); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= maxReceives; i++ {
		ds, err := q.Receive(ctx, base, 1, time.Minute)
		if err != nil || len(ds) != 1 || ds[0].Message != poison || ds[0].ReceiveCount != i {
			t.Fatalf("receive %d = %+v, %v; want poison with count %d", i, ds, err, i)
		}
		if err := q.Release(ctx, base, ds[0].Receipt); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := q.Receive(ctx, base, 10, time.Minute)
	if err != nil || len(ds) != 1 || ds[0].Message != next {
		t.Fatalf("after %d receives: %+v, %v; want only next", maxReceives, ds, err)
	}
	if err := q.Delete(ctx, base, ds[0].Receipt); err != nil {
		t.Fatal(err)
	}
	dl, err := q.Receive(ctx, contracts.DLQ(base), 10, time.Minute)
	if err != nil || len(dl) != 1 || dl[0].Message != poison {
		t.Fatalf("DLQ delivered %+v, %v; want poison", dl, err)
	}
	t.Logf("first DLQ receive reports ReceiveCount %d", dl[0].ReceiveCount)
	if err := q.Delete(ctx, contracts.DLQ(base), dl[0].Receipt); err != nil {
		t.Fatal(err)
	}
}

func TestRejectedReceiptIsNotFound(t *testing.T) {
	c := client(t)
	ctx := awstest.Context(t)
	base := awstest.Name(t, "rcpt")
	q := pair(t, c, base, 3)
	if err := q.Delete(ctx, base, "not-a-receipt"); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("Delete(garbage) = %v, want ErrNotFound", err)
	}
	if err := q.Release(ctx, base, "not-a-receipt"); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("Release(garbage) = %v, want ErrNotFound", err)
	}
	if err := q.Send(ctx, base, message("s", "sub")); err != nil {
		t.Fatal(err)
	}
	ds, err := q.Receive(ctx, base, 1, time.Minute)
	if err != nil || len(ds) != 1 {
		t.Fatalf("Receive = %v, %v", ds, err)
	}
	if err := q.Delete(ctx, base, ds[0].Receipt); err != nil {
		t.Fatal(err)
	}
	if err := q.Release(ctx, base, ds[0].Receipt); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("Release(receipt of a deleted message) = %v, want ErrNotFound", err)
	}
}

func TestPoisonBodyIsNotDelivered(t *testing.T) {
	c := client(t)
	ctx := awstest.Context(t)
	base := awstest.Name(t, "poison")
	q := pair(t, c, base, 3)
	_, err := c.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(q.urls[base]), MessageBody: aws.String("not json"),
		MessageGroupId: aws.String("other"), MessageDeduplicationId: aws.String("poison"),
	})
	if err != nil {
		t.Fatal(err)
	}
	good := message("s", "good")
	if err := q.Send(ctx, base, good); err != nil {
		t.Fatal(err)
	}
	ds, err := q.Receive(ctx, base, 10, time.Minute)
	if err != nil || len(ds) != 1 || ds[0].Message != good {
		t.Fatalf("Receive = %+v, %v; want only the good message", ds, err)
	}
}

// TestTwoReceiversNeverShare: two receivers polling concurrently never get
// the same message within its visibility window, and together drain every
// group's head.
func TestTwoReceiversNeverShare(t *testing.T) {
	c := client(t)
	ctx := awstest.Context(t)
	base := awstest.Name(t, "two")
	q := pair(t, c, base, 3)
	const n = 30
	for i := range n {
		if err := q.Send(ctx, base, message(fmt.Sprint("g", i), fmt.Sprint("m", i))); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu   sync.Mutex
		seen = map[string][]int{}
		wg   sync.WaitGroup
	)
	start := make(chan struct{})
	for r := range 2 {
		wg.Go(func() {
			<-start
			for {
				ds, err := q.Receive(ctx, base, 3, time.Minute)
				if err != nil {
					t.Errorf("receiver %d: %v", r, err)
					return
				}
				if len(ds) == 0 {
					return
				}
				mu.Lock()
				for _, d := range ds {
					seen[d.ID] = append(seen[d.ID], r)
				}
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d distinct messages delivered, want %d", len(seen), n)
	}
	for id, rs := range seen {
		if len(rs) != 1 {
			t.Errorf("message %s delivered to receivers %v", id, rs)
		}
	}
}
