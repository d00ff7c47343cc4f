package stack_test

import (
	"testing"

	"github.com/cairnrun/cairn/infra/stack"
)

// Every queue is FIFO, encrypted, without content-based deduplication (the
// runtime sets deduplication ids), and every main queue dead-letters into
// a FIFO DLQ after MaxReceiveCount deliveries.
func TestEveryQueueIsFIFOWithDLQ(t *testing.T) {
	for _, tp := range all(t) {
		queues := tp.ofType("AWS::SQS::Queue")
		if len(queues) != 2*len(stack.Queues) {
			t.Errorf("%s: %d queues, want %d (a DLQ each)", tp.name, len(queues), 2*len(stack.Queues))
		}
		scheduled := tp.id(tp.s.Queues[stack.QueueWorkflow]) // Scheduler's target: it cannot set a dedup id
		for _, id := range queues {
			p := tp.props(id)
			if p["FifoQueue"] != true || p["ContentBasedDeduplication"] != (id == scheduled) || p["SqsManagedSseEnabled"] != true {
				t.Errorf("%s queue %s: FifoQueue %v ContentBasedDeduplication %v SqsManagedSseEnabled %v",
					tp.name, id, p["FifoQueue"], p["ContentBasedDeduplication"], p["SqsManagedSseEnabled"])
			}
		}
		for _, q := range stack.Queues {
			main, dlq := tp.id(tp.s.Queues[q]), tp.id(tp.s.Queues[stack.DLQ(q)])
			// <prefix>-<deployment id>-<queue>.fifo: the deployment id is
			// the first group of the stack id's UUID (naming.go).
			for id, name := range map[string]string{main: q, dlq: stack.DLQ(q)} {
				want := tp.s.Props.Prefix + "-51af3dc0-" + name + ".fifo"
				if got, _ := deployed(tp.props(id)["QueueName"], stackIDFirst); got != want {
					t.Errorf("%s queue %s deploys as %q, want %q", tp.name, name, got, want)
				}
			}
			rp := obj(tp.props(main)["RedrivePolicy"])
			if js(rp["deadLetterTargetArn"]) != getAtt(dlq, "Arn") || num(rp["maxReceiveCount"]) != stack.MaxReceiveCount {
				t.Errorf("%s queue %s redrive %s, want DLQ %s after %d receives", tp.name, q, js(rp), dlq, stack.MaxReceiveCount)
			}
			if tp.props(dlq)["RedrivePolicy"] != nil {
				t.Errorf("%s DLQ %s itself redrives", tp.name, dlq)
			}
		}
	}
}

// A queue's visibility timeout is at least 6× the timeout of the function
// its event source mapping feeds, found through the template itself.
func TestVisibilityAtLeastSixTimesConsumerTimeout(t *testing.T) {
	for _, tp := range all(t) {
		for _, id := range tp.ofType("AWS::Lambda::EventSourceMapping") {
			m := tp.props(id)
			queue := obj(m["EventSourceArn"])["Fn::GetAtt"]
			fnRef := obj(m["FunctionName"])["Ref"]
			qid, _ := list(queue)[0].(string)
			fid, _ := fnRef.(string)
			vis := num(tp.props(qid)["VisibilityTimeout"])
			timeout := num(tp.props(fid)["Timeout"])
			if timeout == 0 || vis < 6*timeout {
				t.Errorf("%s: queue %s visibility %vs < 6 × %s timeout %vs", tp.name, qid, vis, fid, timeout)
			}
		}
	}
}

// Each main queue feeds exactly its function, and every event source
// mapping reports batch item failures with a batch size and a maximum
// concurrency.
func TestEventSourceMappingsReportBatchItemFailures(t *testing.T) {
	consumer := map[string]string{stack.QueueModel: stack.FnModel, stack.QueueTools: stack.FnTools, stack.QueueCommit: stack.FnCommit, stack.QueueWorkflow: stack.FnWorkflow}
	for _, tp := range all(t) {
		fed := map[string]string{} // queue id → function id
		for _, id := range tp.ofType("AWS::Lambda::EventSourceMapping") {
			m := tp.props(id)
			if js(m["FunctionResponseTypes"]) != `["ReportBatchItemFailures"]` {
				t.Errorf("%s mapping %s: FunctionResponseTypes %s", tp.name, id, js(m["FunctionResponseTypes"]))
			}
			if n := num(m["BatchSize"]); n < 1 || n > 10 {
				t.Errorf("%s mapping %s: BatchSize %v (FIFO: 1..10)", tp.name, id, n)
			}
			if n := num(obj(m["ScalingConfig"])["MaximumConcurrency"]); n < 2 {
				t.Errorf("%s mapping %s: MaximumConcurrency %v", tp.name, id, n)
			}
			qid, _ := list(obj(m["EventSourceArn"])["Fn::GetAtt"])[0].(string)
			if prev, dup := fed[qid]; dup {
				t.Errorf("%s: queue %s feeds two functions (%s)", tp.name, qid, prev)
			}
			fed[qid] = js(m["FunctionName"])
		}
		if len(fed) != len(stack.Queues) {
			t.Errorf("%s: %d mappings, want one per main queue", tp.name, len(fed))
		}
		for q, fn := range consumer {
			if got, want := fed[tp.id(tp.s.Queues[q])], ref(tp.id(tp.s.Functions[fn])); got != want {
				t.Errorf("%s: queue %s feeds %s, want %s", tp.name, q, got, want)
			}
		}
	}
}
