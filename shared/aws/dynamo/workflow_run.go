package dynamo

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairnrun/cairn/shared/contracts"
)

// A run is its record RUN#<run> / RUN and a pointer in its workflow's
// partition, WF#<workflow> / RUN#<started_at>#<run>, naming it, so that
// ListRuns is one strongly consistent Query (newest first) and a batch of
// consistent reads. The pointer is immutable: a run's WorkflowID and
// StartedAt are fixed at creation (an update changing them does not move
// the run in the list). CreateRun writes the record, then the pointer; a
// duplicate CreateRun writes the pointer again, so a crash between the two
// writes is repaired by the next creation attempt (a retry, a duplicate
// firing), and a pointer never names a missing run.
//
// While a run is RUNNING its record also carries the sparse gsi1 keys
// RUNS_UNFINISHED#<shard> / <run> (and attrUpdated), as an unfinished
// submission does UNFINISHED#…: every write puts the whole item, so the
// write that ends the run drops it from the repair sweep's index.

const (
	skRun   = "RUN"
	attrRun = "run" // the pointer's run id

	// unfinishedRuns prefixes the gsi1 partitions of RUNNING runs.
	unfinishedRuns = "RUNS_UNFINISHED#"
)

func runPK(id string) string { return "RUN#" + id }

func runPointer(r contracts.WorkflowRun) item {
	return with(key(workflowPK(r.WorkflowID), "RUN#"+sortTime(r.StartedAt)+"#"+r.ID), item{attrRun: str(r.ID)})
}

// runItem is the full record item of r (the caller sets Version). Only a
// RUNNING run carries the GSI key attributes, so the write that ends it
// drops it from the sparse repair index.
func (s *Store) runItem(ctx context.Context, r contracts.WorkflowRun) (item, error) {
	body, err := s.encodeWhole(ctx, r)
	if err != nil {
		return nil, err
	}
	it := with(key(runPK(r.ID), skRun), body, item{attrVersion: num(r.Version)})
	if r.Status == contracts.RunRunning {
		it[attrGSIPK] = str(unfinishedRuns + strconv.Itoa(shard(r.ID)))
		it[attrGSISK] = str(r.ID)
		it[attrUpdated] = str(sortTime(r.UpdatedAt))
	}
	return it, nil
}

// CreateRun stores r with Version 1. If a run with its id exists, it
// returns that run, unchanged, and created=false: the conditional put's
// ALL_OLD item is the existing run — unless it is this call's own (its
// write id: the SDK retried a put whose answer was lost), then created.
func (w *Workflows) CreateRun(ctx context.Context, r contracts.WorkflowRun) (contracts.WorkflowRun, bool, error) {
	if r.ID == "" {
		return contracts.WorkflowRun{}, false, fmt.Errorf("creating workflow run: empty id: %w", contracts.ErrInvalid)
	}
	r.Version = 1
	it, err := w.s.runItem(ctx, r)
	if err != nil {
		return contracts.WorkflowRun{}, false, fmt.Errorf("creating workflow run %s: %w", r.ID, err)
	}
	old, err := w.s.claim(ctx, it)
	if err != nil {
		return contracts.WorkflowRun{}, false, fmt.Errorf("creating workflow run %s: %w", r.ID, err)
	}
	created := old == nil
	if !created {
		var existing contracts.WorkflowRun
		if err := w.s.decode(ctx, old, &existing); err != nil {
			return contracts.WorkflowRun{}, false, fmt.Errorf("creating workflow run %s: reading existing: %w", r.ID, err)
		}
		r = existing
	}
	if err := w.s.putIfAbsent(ctx, runPointer(r)); err != nil {
		return contracts.WorkflowRun{}, false, fmt.Errorf("creating workflow run %s: listing it under workflow %s: %w", r.ID, r.WorkflowID, err)
	}
	return r, created, nil
}

// GetRun returns the run (consistent read) or ErrNotFound.
func (w *Workflows) GetRun(ctx context.Context, id string) (contracts.WorkflowRun, error) {
	var r contracts.WorkflowRun
	if err := w.s.getRecord(ctx, runPK(id), skRun, &r); err != nil {
		return contracts.WorkflowRun{}, fmt.Errorf("getting workflow run %s: %w", id, err)
	}
	return r, nil
}

// UpdateRun writes r with Version expected+1 if the stored version is
// expected; otherwise ErrConflict (ErrNotFound if absent), told apart by
// the ALL_OLD item.
func (w *Workflows) UpdateRun(ctx context.Context, r contracts.WorkflowRun, expected int64) (contracts.WorkflowRun, error) {
	if r.ID == "" {
		return contracts.WorkflowRun{}, fmt.Errorf("updating workflow run: empty id: %w", contracts.ErrInvalid)
	}
	r.Version = expected + 1
	it, err := w.s.runItem(ctx, r)
	if err != nil {
		return contracts.WorkflowRun{}, fmt.Errorf("updating workflow run %s: %w", r.ID, err)
	}
	if err := w.s.putVersioned(ctx, it, expected); err != nil {
		return contracts.WorkflowRun{}, fmt.Errorf("updating workflow run %s at version %d: %w", r.ID, expected, err)
	}
	return r, nil
}

// ListRuns returns up to limit (≤ 0: all) runs of the workflow, newest
// StartedAt first (ties: greater id first): a consistent Query of the
// workflow's run pointers, then consistent batch reads of the runs.
func (w *Workflows) ListRuns(ctx context.Context, workflowID string, limit int) ([]contracts.WorkflowRun, error) {
	var ids []string
	seen := map[string]bool{}
	err := w.s.query(ctx, &dynamodb.QueryInput{
		ConsistentRead:            new(true),
		KeyConditionExpression:    new("pk = :pk AND begins_with(sk, :prefix)"),
		ExpressionAttributeValues: item{":pk": str(workflowPK(workflowID)), ":prefix": str("RUN#")},
		ScanIndexForward:          new(false),
	}, limit, func(it item) (bool, error) {
		if id := getS(it, attrRun); !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing runs of workflow %s: %w", workflowID, err)
	}
	keys := make([]item, len(ids))
	for i, id := range ids {
		keys[i] = key(runPK(id), skRun)
	}
	its, err := w.s.batchGet(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("listing runs of workflow %s: %w", workflowID, err)
	}
	byID := make(map[string]item, len(its))
	for _, it := range its {
		byID[getS(it, attrPK)] = it
	}
	out := make([]contracts.WorkflowRun, 0, len(ids))
	for _, id := range ids {
		it, ok := byID[runPK(id)]
		if !ok {
			continue // unreachable: a pointer is written after its run
		}
		var r contracts.WorkflowRun
		if err := w.s.decode(ctx, it, &r); err != nil {
			return nil, fmt.Errorf("listing runs of workflow %s: run %s: %w", workflowID, id, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// ListUnfinishedRuns returns up to limit (≤ 0: all) RUNNING runs, oldest
// UpdatedAt first: the sparse GSI's RUNS_UNFINISHED#0..7 partitions'
// entries, then the chosen runs read by key (queryUnfinished), so one
// ended since its entry was read is left out.
func (w *Workflows) ListUnfinishedRuns(ctx context.Context, limit int) ([]contracts.WorkflowRun, error) {
	its, err := w.s.queryUnfinished(ctx, unfinishedRuns, limit)
	if err != nil {
		return nil, fmt.Errorf("listing unfinished workflow runs: %w", err)
	}
	out := make([]contracts.WorkflowRun, 0, len(its))
	for _, it := range its {
		var r contracts.WorkflowRun
		if err := w.s.decode(ctx, it, &r); err != nil {
			return nil, fmt.Errorf("listing unfinished workflow runs: %w", err)
		}
		if r.Status == contracts.RunRunning { // ended since its index entry was read
			out = append(out, r)
		}
	}
	return out, nil
}

// batchGet reads the items of keys (distinct) with consistent
// BatchGetItems of up to 100 keys, retrying unprocessed keys with backoff.
// Items come back in no particular order; absent ones are left out.
func (s *Store) batchGet(ctx context.Context, keys []item) ([]item, error) {
	var out []item
	for len(keys) > 0 {
		n := min(len(keys), 100)
		req := map[string]types.KeysAndAttributes{*s.table: {Keys: keys[:n], ConsistentRead: new(true)}}
		keys = keys[n:]
		for wait := 10 * time.Millisecond; ; wait = min(2*wait, time.Second) {
			res, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return nil, err
			}
			out = append(out, res.Responses[*s.table]...)
			if req = res.UnprocessedKeys; len(req[*s.table].Keys) == 0 {
				break
			}
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	return out, nil
}
