package crashpoint

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairnrun/cairn/shared/assemble"
	"github.com/cairnrun/cairn/shared/contracts"
)

// Wrap returns p with its JournalStore, TranscriptStore, StreamStore,
// EventLog and Queue decorated to count and crash per plan. The other ports
// are unchanged. A nil plan returns p unchanged.
func Wrap(p assemble.Ports, plan *Plan) assemble.Ports {
	if plan == nil {
		return p
	}
	p.Journal = journal{p.Journal, plan}
	p.Transcript = transcript{p.Transcript, plan}
	p.Streams = streams{p.Streams, plan}
	p.Events = events{p.Events, plan}
	q := &queue{Queue: p.Queue, plan: plan, inflight: map[string]string{}}
	plan.addQueue(q)
	p.Queue = q
	if p.Batch != nil {
		p.Batch = batcher{p.Batch, plan}
	}
	return p
}

// batcher makes a batch's commit a write point of its own: a crash before
// it loses every write of the batch (each of them was a point too, and a
// crash at one of those inside the batch loses them all as well), a crash
// after it keeps them all.
type batcher struct {
	contracts.Batcher
	plan *Plan
}

// Batch counts the batch's commit as one write point, keyed by the ops of
// the writes inside it, armed once they are done: a crash "before" it
// panics inside the batch (everything of it rolled back), "after" it once
// it committed. A batch inside a batch is part of the outer one.
func (b batcher) Batch(ctx context.Context, fn func(ctx context.Context) error) error {
	if inBatch(ctx) {
		return fn(ctx)
	}
	ops := &batchOps{}
	crash := false
	err := b.Batcher.Batch(context.WithValue(ctx, batchKey{}, ops), func(ctx context.Context) error {
		if err := fn(ctx); err != nil {
			return err
		}
		if crash = b.plan.arm("Batch", ops.key()); crash && b.plan.Before {
			panic(Crash)
		}
		return nil
	})
	if crash && err == nil {
		panic(Crash)
	}
	return err
}

type batchKey struct{}

// batchOps collects the ops of the writes inside one batch.
type batchOps struct {
	mu  sync.Mutex
	ops []string
}

func (o *batchOps) add(op string) {
	o.mu.Lock()
	o.ops = append(o.ops, op)
	o.mu.Unlock()
}

func (o *batchOps) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.ops...)
}

func (o *batchOps) key() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.ops, ",")
}

func inBatch(ctx context.Context) bool {
	_, ok := ctx.Value(batchKey{}).(*batchOps)
	return ok
}

type journal struct {
	contracts.JournalStore
	plan *Plan
}

func (j journal) CreateSession(ctx context.Context, s contracts.Session) (out contracts.Session, err error) {
	j.plan.write(ctx, "CreateSession", s.ID, func() { out, err = j.JournalStore.CreateSession(ctx, s) })
	return out, err
}

func (j journal) UpdateSession(ctx context.Context, s contracts.Session, expected int64) (out contracts.Session, err error) {
	j.plan.write(ctx, "UpdateSession", s.ID, func() { out, err = j.JournalStore.UpdateSession(ctx, s, expected) })
	return out, err
}

func (j journal) CreateSubmission(ctx context.Context, s contracts.Submission) (out contracts.Submission, created bool, err error) {
	j.plan.write(ctx, "CreateSubmission", s.ID, func() { out, created, err = j.JournalStore.CreateSubmission(ctx, s) })
	return out, created, err
}

func (j journal) UpdateSubmission(ctx context.Context, s contracts.Submission, expected int64) (out contracts.Submission, err error) {
	j.plan.write(ctx, "UpdateSubmission", s.ID, func() { out, err = j.JournalStore.UpdateSubmission(ctx, s, expected) })
	return out, err
}

func (j journal) MarkToolStarted(ctx context.Context, submissionID string, step int, callID string) (err error) {
	j.plan.write(ctx, "MarkToolStarted", toolKey(submissionID, step, callID), func() {
		err = j.JournalStore.MarkToolStarted(ctx, submissionID, step, callID)
	})
	return err
}

func (j journal) PutToolResult(ctx context.Context, submissionID string, step int, r contracts.ToolResult) (err error) {
	j.plan.write(ctx, "PutToolResult", toolKey(submissionID, step, r.CallID), func() {
		err = j.JournalStore.PutToolResult(ctx, submissionID, step, r)
	})
	return err
}

// SubmissionVersion forwards the store's narrow read (a read: no write
// point), so the engine's paths that use it — a handed record's check, a
// model phase's look before its node — run under the crash plan too; a
// store without it answers from the whole record.
func (j journal) SubmissionVersion(ctx context.Context, id string) (int64, error) {
	if v, ok := j.JournalStore.(contracts.SubmissionVersioner); ok {
		return v.SubmissionVersion(ctx, id)
	}
	s, err := j.JournalStore.GetSubmission(ctx, id)
	return s.Version, err
}

func toolKey(submissionID string, step int, callID string) string {
	return submissionID + "/" + strconv.Itoa(step) + "/" + callID
}

type transcript struct {
	contracts.TranscriptStore
	plan *Plan
}

func (t transcript) PutNode(ctx context.Context, n contracts.Node) (err error) {
	t.plan.write(ctx, "PutNode", n.ID, func() { err = t.TranscriptStore.PutNode(ctx, n) })
	return err
}

// CreateNode is PutNode's write point for the store's NodeCreator; a store
// without it says created=false (nothing is cached from the write).
func (t transcript) CreateNode(ctx context.Context, n contracts.Node) (created bool, err error) {
	nc, ok := t.TranscriptStore.(contracts.NodeCreator)
	t.plan.write(ctx, "PutNode", n.ID, func() {
		if ok {
			created, err = nc.CreateNode(ctx, n)
			return
		}
		err = t.TranscriptStore.PutNode(ctx, n)
	})
	return created, err
}

type streams struct {
	contracts.StreamStore
	plan *Plan
}

func (s streams) PutChunks(ctx context.Context, key string, first int, evs ...contracts.ModelEvent) (err error) {
	s.plan.write(ctx, "PutChunks", key, func() { err = s.StreamStore.PutChunks(ctx, key, first, evs...) })
	return err
}

func (s streams) Complete(ctx context.Context, key string, resp contracts.ModelResponse) (won contracts.ModelResponse, err error) {
	s.plan.write(ctx, "Complete", key, func() { won, err = s.StreamStore.Complete(ctx, key, resp) })
	return won, err
}

type events struct {
	contracts.EventLog
	plan *Plan
}

func (e events) AppendEvents(ctx context.Context, evs ...contracts.Event) (err error) {
	key := ""
	if len(evs) > 0 {
		key = evs[0].Key
	}
	e.plan.write(ctx, "AppendEvents", key, func() { err = e.EventLog.AppendEvents(ctx, evs...) })
	return err
}

// queue decorates a Queue. Besides counting its writes it records the
// deliveries received and not yet deleted or released, so ReleaseInflight
// can make them visible again.
type queue struct {
	contracts.Queue
	plan *Plan

	mu       sync.Mutex
	inflight map[string]string // queue name + "\x00" + message id → latest receipt
}

func (q *queue) Send(ctx context.Context, name string, m contracts.Message) (err error) {
	q.plan.write(ctx, "Send", name+":"+m.DedupID(), func() { err = q.Queue.Send(ctx, name, m) })
	return err
}

// SendClaimed is a Send (the same write point) that hands the message to
// the sender as received when the inner queue can (contracts.Claimer); the
// claimed delivery is recorded in flight like a received one.
func (q *queue) SendClaimed(ctx context.Context, name string, m contracts.Message, visibility time.Duration) (d contracts.Delivery, ok bool, err error) {
	c, can := q.Queue.(contracts.Claimer)
	q.plan.write(ctx, "Send", name+":"+m.DedupID(), func() {
		if !can {
			err = q.Queue.Send(ctx, name, m)
			return
		}
		d, ok, err = c.SendClaimed(ctx, name, m, visibility)
		if ok { // before a crash after the write: it is in flight now
			q.mu.Lock()
			q.inflight[name+"\x00"+d.ID] = d.Receipt
			q.mu.Unlock()
		}
	})
	return d, ok, err
}

// Forward is a Send (the same write point) that also consumes the message
// held under receipt when the inner queue can (contracts.Forwarder):
// the consumed delivery is forgotten and the new one recorded in flight.
func (q *queue) Forward(ctx context.Context, from, receipt, name string, m contracts.Message, visibility time.Duration) (d contracts.Delivery, ok, consumed bool, err error) {
	f, can := q.Queue.(contracts.Forwarder)
	if !can {
		d, ok, err = q.SendClaimed(ctx, name, m, visibility)
		return d, ok, false, err
	}
	q.plan.write(ctx, "Send", name+":"+m.DedupID(), func() {
		d, ok, consumed, err = f.Forward(ctx, from, receipt, name, m, visibility)
		if consumed {
			q.forget(from, receipt)
		}
		if ok { // before a crash after the write: it is in flight now
			q.mu.Lock()
			q.inflight[name+"\x00"+d.ID] = d.Receipt
			q.mu.Unlock()
		}
	})
	return d, ok, consumed, err
}

func (q *queue) Receive(ctx context.Context, name string, max int, visibility time.Duration) ([]contracts.Delivery, error) {
	ds, err := q.Queue.Receive(ctx, name, max, visibility)
	q.mu.Lock()
	for _, d := range ds {
		id := d.ID
		if id == "" {
			id = d.Receipt
		}
		q.inflight[name+"\x00"+id] = d.Receipt
	}
	q.mu.Unlock()
	return ds, err
}

func (q *queue) Delete(ctx context.Context, name, receipt string) (err error) {
	q.plan.write(ctx, "Delete", name, func() {
		if err = q.Queue.Delete(ctx, name, receipt); err == nil {
			q.forget(name, receipt)
		}
	})
	return err
}

func (q *queue) Release(ctx context.Context, name, receipt string) (err error) {
	q.plan.write(ctx, "Release", name, func() {
		if err = q.Queue.Release(ctx, name, receipt); err == nil {
			q.forget(name, receipt)
		}
	})
	return err
}

func (q *queue) forget(name, receipt string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for k, r := range q.inflight {
		if r == receipt && strings.HasPrefix(k, name+"\x00") {
			delete(q.inflight, k)
		}
	}
}

// releaseInflight releases every recorded delivery through the inner
// queue, uncounted; a receipt the queue no longer honours (the message was
// deleted meanwhile) is not an error.
func (q *queue) releaseInflight(ctx context.Context) (int, error) {
	q.mu.Lock()
	held := q.inflight
	q.inflight = map[string]string{}
	q.mu.Unlock()
	n := 0
	var errs []error
	for k, receipt := range held {
		name, _, _ := strings.Cut(k, "\x00")
		switch err := q.Queue.Release(ctx, name, receipt); {
		case err == nil:
			n++
		case errors.Is(err, contracts.ErrNotFound):
		default:
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}
