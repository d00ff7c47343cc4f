package dynamo

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Workflow items (doc.go has the whole key schema):
//
//	workflow     WF#<wf>     WORKFLOW                      body|blob, gsi1pk=WORKFLOWS#<0-7>, gsi1sk=<wf>, owner
//	schedule     SCHED#<id>  SCHEDULE                      body|blob, gsi1pk=SCHEDULES#<0-7>, gsi1sk=<id>
//	                                                       (UpdateSchedule: attribute_exists; DeleteSchedule: DeleteItem)
//	run          RUN#<run>   RUN                           body|blob, version
//	run pointer  WF#<wf>     RUN#<started_at>#<run>        run
//	node         RUN#<run>   NODE#<node>                   body|blob (no result), seq, lsk=NODE#<seq:010>#<node>,
//	                                                       result|result_blob once set
//
// workflow_run.go and workflow_node.go hold the run and node operations.

// Workflows is the Store's contracts.WorkflowStore: a view of the same
// table, a type of its own because the transcript port already gives Store
// a PutNode. Get it with Store.Workflows.
type Workflows struct{ s *Store }

var _ contracts.WorkflowStore = (*Workflows)(nil)

// Workflows returns the WorkflowStore on s's table (and blob store).
func (s *Store) Workflows() *Workflows { return &Workflows{s: s} }

const (
	skWorkflow = "WORKFLOW"
	skSchedule = "SCHEDULE"
)

func workflowPK(id string) string { return "WF#" + id }
func schedulePK(id string) string { return "SCHED#" + id }

// CreateWorkflow stores wf, or returns ErrExists if its id is taken (by
// another call: not by this call's own first attempt, whose answer was
// lost).
func (w *Workflows) CreateWorkflow(ctx context.Context, wf contracts.Workflow) (contracts.Workflow, error) {
	if wf.ID == "" {
		return contracts.Workflow{}, fmt.Errorf("creating workflow: empty id: %w", contracts.ErrInvalid)
	}
	body, err := w.s.encodeWhole(ctx, wf)
	if err == nil {
		extra := item{ // the sparse index ListWorkflows reads; the owner beside a body that may be a claim check
			attrGSIPK: str("WORKFLOWS#" + strconv.Itoa(shard(wf.ID))),
			attrGSISK: str(wf.ID),
		}
		if wf.Owner != "" {
			extra[attrOwner] = str(wf.Owner)
		}
		err = w.s.putNew(ctx, with(key(workflowPK(wf.ID), skWorkflow), body, extra))
	}
	if err != nil {
		return contracts.Workflow{}, fmt.Errorf("creating workflow %s: %w", wf.ID, err)
	}
	return wf, nil
}

// GetWorkflow returns the workflow (consistent read) or ErrNotFound.
func (w *Workflows) GetWorkflow(ctx context.Context, id string) (contracts.Workflow, error) {
	var wf contracts.Workflow
	if err := w.s.getRecord(ctx, workflowPK(id), skWorkflow, &wf); err != nil {
		return contracts.Workflow{}, fmt.Errorf("getting workflow %s: %w", id, err)
	}
	return wf, nil
}

// ListWorkflows returns up to limit workflows (≤ 0: all), newest id
// first, merged from the GSI's WORKFLOWS#0..7 partitions (eventually
// consistent); only owner's when owner is not "" (a filter on the owner
// attribute, as ListSessions). A workflow created before the index was
// written (without gsi1pk) is not listed; GetWorkflow still reads it.
func (w *Workflows) ListWorkflows(ctx context.Context, owner string, limit int) ([]contracts.Workflow, error) {
	its, err := w.s.queryIndex(ctx, "WORKFLOWS#", owner, limit, false)
	if err != nil {
		return nil, fmt.Errorf("listing workflows: %w", err)
	}
	out := make([]contracts.Workflow, len(its))
	for i, it := range its {
		if err := w.s.decode(ctx, it, &out[i]); err != nil {
			return nil, fmt.Errorf("listing workflows: %w", err)
		}
	}
	return out, nil
}

// CreateSchedule stores sc, or returns ErrExists if its id is taken. The
// item carries the sparse GSI keys that ListSchedules reads.
func (w *Workflows) CreateSchedule(ctx context.Context, sc contracts.Schedule) (contracts.Schedule, error) {
	if sc.ID == "" {
		return contracts.Schedule{}, fmt.Errorf("creating schedule: empty id: %w", contracts.ErrInvalid)
	}
	it, err := w.s.scheduleItem(ctx, sc)
	if err == nil {
		err = w.s.putNew(ctx, it)
	}
	if err != nil {
		return contracts.Schedule{}, fmt.Errorf("creating schedule %s: %w", sc.ID, err)
	}
	return sc, nil
}

// scheduleItem is the whole item of sc, with the sparse GSI keys that
// ListSchedules reads.
func (s *Store) scheduleItem(ctx context.Context, sc contracts.Schedule) (item, error) {
	body, err := s.encodeWhole(ctx, sc)
	if err != nil {
		return nil, err
	}
	return with(key(schedulePK(sc.ID), skSchedule), body, item{
		attrGSIPK: str("SCHEDULES#" + strconv.Itoa(shard(sc.ID))),
		attrGSISK: str(sc.ID),
	}), nil
}

// UpdateSchedule puts sc whole if schedule sc.ID exists (attribute_exists:
// a put never resurrects a schedule a delete removed); ErrNotFound if it
// does not. A retry of a put whose answer was lost meets an item that
// still exists and succeeds again: no write id is needed.
func (w *Workflows) UpdateSchedule(ctx context.Context, sc contracts.Schedule) (contracts.Schedule, error) {
	if sc.ID == "" {
		return contracts.Schedule{}, fmt.Errorf("updating schedule: empty id: %w", contracts.ErrInvalid)
	}
	it, err := w.s.scheduleItem(ctx, sc)
	if err == nil {
		_, err = w.s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: w.s.table, Item: it, ConditionExpression: new("attribute_exists(pk)"),
		})
		if _, failed := conditionFailed(err); failed {
			err = contracts.ErrNotFound
		}
	}
	if err != nil {
		return contracts.Schedule{}, fmt.Errorf("updating schedule %s: %w", sc.ID, err)
	}
	return sc, nil
}

// DeleteSchedule deletes the schedule's item (unconditionally: deleting an
// absent item succeeds, so a retried or repeated delete is harmless).
func (w *Workflows) DeleteSchedule(ctx context.Context, id string) error {
	_, err := w.s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: w.s.table, Key: key(schedulePK(id), skSchedule)})
	if err != nil {
		return fmt.Errorf("deleting schedule %s: %w", id, err)
	}
	return nil
}

// GetSchedule returns the schedule (consistent read) or ErrNotFound.
func (w *Workflows) GetSchedule(ctx context.Context, id string) (contracts.Schedule, error) {
	var sc contracts.Schedule
	if err := w.s.getRecord(ctx, schedulePK(id), skSchedule, &sc); err != nil {
		return contracts.Schedule{}, fmt.Errorf("getting schedule %s: %w", id, err)
	}
	return sc, nil
}

// ListSchedules returns every schedule in id order, merged from the GSI's
// SCHEDULES#0..7 partitions (eventually consistent: a schedule created a
// moment ago may be missing).
func (w *Workflows) ListSchedules(ctx context.Context) ([]contracts.Schedule, error) {
	its, err := w.s.queryShards(ctx, "SCHEDULES#", 0, true)
	if err != nil {
		return nil, fmt.Errorf("listing schedules: %w", err)
	}
	out := make([]contracts.Schedule, len(its))
	for i, it := range its {
		if err := w.s.decode(ctx, it, &out[i]); err != nil {
			return nil, fmt.Errorf("listing schedules: %w", err)
		}
	}
	return out, nil
}

// putNew puts it if no item has its key, else ErrExists — unless the item
// holding the key is the one this call stored (a retried put whose answer
// was lost; see claim).
func (s *Store) putNew(ctx context.Context, it item) error {
	old, err := s.claim(ctx, it)
	if err != nil {
		return err
	}
	if old != nil {
		return contracts.ErrExists
	}
	return nil
}

// getRecord decodes the record of item (pk, sk), read consistently, into
// v; ErrNotFound if there is no such item.
func (s *Store) getRecord(ctx context.Context, pk, sk string, v any) error {
	it, err := s.getItem(ctx, pk, sk)
	if err != nil {
		return err
	}
	if it == nil {
		return contracts.ErrNotFound
	}
	return s.decode(ctx, it, v)
}
