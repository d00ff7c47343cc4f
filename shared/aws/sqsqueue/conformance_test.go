package sqsqueue

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
	"github.com/cairnrun/cairn/shared/testkit/conformance/queuetest"
)

// maxReceives of the conformance queues: small, so DeadLetter is quick.
const maxReceives = 3

// dedupWindow is SQS's fixed FIFO deduplication window.
const dedupWindow = 5 * time.Minute

// slow are subtests whose Advance waits minutes of real time (a fraction
// of, or past, the 5-minute dedup window); -short skips them.
var slow = map[string]bool{"Dedup": true, "DedupWindowExpires": true}

// TestConformance runs the queue conformance suite, unchanged, against real
// SQS queues at the test endpoint. Advance is a real wait: SQS has no
// injectable clock. Subtests run in parallel, each on its own queue pair,
// so the run takes as long as the longest wait (DedupWindowExpires, just
// over 5 minutes; about 40 s with -short).
//
// A subtest whose contract the endpoint demonstrably does not keep (see
// probeGaps) is skipped with the observed behaviour as the reason; the
// SQS-specific tests in queue_test.go cover what those subtests check
// besides it.
func TestConformance(t *testing.T) {
	c := client(t)
	gaps := probeGaps(t, c)
	queuetest.Run(t, func(t *testing.T) queuetest.Harness {
		name := t.Name()[strings.LastIndex(t.Name(), "/")+1:]
		if reason, ok := gaps[name]; ok {
			t.Skip("endpoint differs from the queue contract: " + reason)
		}
		if testing.Short() && slow[name] {
			t.Skip("waits minutes for the SQS dedup window; run without -short")
		}
		t.Parallel()
		return queuetest.Harness{
			Queue:       &lazyQueue{t: t, client: c, maxReceives: maxReceives},
			MaxReceives: maxReceives,
			Advance:     time.Sleep, // a real wait for a queue timeout, not synchronisation
			DedupWindow: dedupWindow,
			Visibility:  2 * time.Second, // real waits: keep them short
		}
	})
}

// probeGaps checks, on one throw-away queue pair, whether the endpoint
// keeps deduplication ids after their message is deleted, as AWS does for
// the 5-minute window. moto 5.x forgets them as soon as the message leaves
// the queue; then Dedup (and DedupWindowExpires, which would wait five
// minutes to observe nothing) are skipped with that reason. On LocalStack
// or AWS they run.
//
// Release stands in for waiting, so the probe never sleeps.
func probeGaps(t *testing.T, c *sqs.Client) map[string]string {
	t.Helper()
	ctx := awstest.Context(t)
	base := awstest.Name(t, "probe")
	q := pair(t, c, base, 2)
	gaps := map[string]string{}
	receive := func(queue string) contracts.Delivery {
		t.Helper()
		for range 5 {
			ds, err := q.Receive(ctx, queue, 1, time.Minute)
			if err != nil {
				t.Fatalf("probe: Receive: %v", err)
			}
			if len(ds) == 1 {
				return ds[0]
			}
		}
		t.Fatalf("probe: nothing to receive on %s", queue)
		return contracts.Delivery{}
	}
	send := func(m contracts.Message) {
		t.Helper()
		if err := q.Send(ctx, base, m); err != nil {
			t.Fatalf("probe: Send: %v", err)
		}
	}

	// Dedup after delete.
	m := message("probe-dedup", "dedup")
	send(m)
	if err := q.Delete(ctx, base, receive(base).Receipt); err != nil {
		t.Fatalf("probe: Delete: %v", err)
	}
	send(m)
	if ds, err := q.Receive(ctx, base, 10, time.Minute); err != nil {
		t.Fatalf("probe: Receive: %v", err)
	} else if len(ds) > 0 {
		gaps["Dedup"] = "a duplicate sent after its original was deleted is delivered again (the endpoint forgets deduplication ids of deleted messages)"
		for _, d := range ds {
			_ = q.Delete(ctx, base, d.Receipt)
		}
	}

	if reason, ok := gaps["Dedup"]; ok {
		// nothing to observe: the endpoint never remembers an id that long
		gaps["DedupWindowExpires"] = reason + "; so the window's expiry cannot be observed either"
	}
	for name, reason := range gaps {
		t.Logf("%s: %s", name, reason)
	}
	return gaps
}
