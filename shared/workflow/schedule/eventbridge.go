package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/cairnrun/cairn/shared/contracts"
)

// SchedulerAPI is the part of the EventBridge Scheduler client the adapter
// uses; *scheduler.Client implements it.
type SchedulerAPI interface {
	CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error)
	DeleteSchedule(ctx context.Context, in *scheduler.DeleteScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error)
	GetSchedule(ctx context.Context, in *scheduler.GetScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.GetScheduleOutput, error)
	UpdateSchedule(ctx context.Context, in *scheduler.UpdateScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.UpdateScheduleOutput, error)
}

var (
	_ SchedulerAPI        = (*scheduler.Client)(nil)
	_ contracts.Scheduler = (*EventBridge)(nil)
)

// ScheduledTimeAttribute is the Scheduler context attribute replaced, at
// each invocation, by the firing's scheduled time ("2026-11-29T12:00:00Z").
const ScheduledTimeAttribute = "<aws.scheduler.scheduled-time>"

// EventBridge creates the AWS side of schedules: one EventBridge Scheduler
// schedule per cairn schedule, named by its id, sending a workflow wake-up
// (InputTemplate) to the workflow SQS FIFO queue.
type EventBridge struct {
	Client   SchedulerAPI
	Group    string // the schedule group ("" = "default")
	RoleARN  string // the role Scheduler assumes: sqs:SendMessage on QueueARN
	QueueARN string // the workflow FIFO queue
	// MaxEventAge bounds how long Scheduler retries a failed delivery
	// (1 minute to 24 hours; 0 = Scheduler's default, 24 hours).
	MaxEventAge time.Duration
	// DLQARN, if set, is an SQS queue receiving firings Scheduler gave up
	// on (the role must be allowed to send to it).
	DLQARN string
}

// Create creates the schedule s. It is idempotent: if a schedule of that
// name already exists with the same expression, Create succeeds; with a
// different expression it returns an error wrapping contracts.ErrExists.
// An invalid expression or id wraps contracts.ErrInvalid; a missing group
// wraps contracts.ErrNotFound.
func (eb *EventBridge) Create(ctx context.Context, s contracts.Schedule) error {
	if err := eb.check("creating", s); err != nil {
		return err
	}
	in := eb.input(s)
	for range 2 { // a second round if the existing schedule vanished meanwhile
		_, err := eb.Client.CreateSchedule(ctx, in)
		if err == nil {
			return nil
		}
		var conflict *types.ConflictException
		if !errors.As(err, &conflict) {
			return fmt.Errorf("creating EventBridge schedule %s: %w", s.ID, mapErr(err))
		}
		got, err := eb.Client.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(s.ID), GroupName: eb.group()})
		var nf *types.ResourceNotFoundException
		switch {
		case errors.As(err, &nf):
			continue
		case err != nil:
			return fmt.Errorf("reading existing EventBridge schedule %s: %w", s.ID, mapErr(err))
		}
		if aws.ToString(got.ScheduleExpression) != aws.ToString(in.ScheduleExpression) {
			return fmt.Errorf("EventBridge schedule %s exists with expression %q, not %q: %w",
				s.ID, aws.ToString(got.ScheduleExpression), s.Expression, contracts.ErrExists)
		}
		return nil
	}
	return fmt.Errorf("creating EventBridge schedule %s: it exists, then does not: %w", s.ID, contracts.ErrConflict)
}

// Update rewrites schedule s whole — the definition Create makes
// (expression, target, role, retry policy, dead-letter queue, flexible time
// window, group) — with State DISABLED when s.Paused, ENABLED otherwise.
// UpdateSchedule replaces every field it is not given with its default, so
// the whole definition is sent and nothing needs reading first. A schedule
// that does not exist is an error wrapping contracts.ErrNotFound: Update
// never creates one (a pause or resume racing a delete must not bring it
// back). Invalid input wraps contracts.ErrInvalid, as for Create.
func (eb *EventBridge) Update(ctx context.Context, s contracts.Schedule) error {
	if err := eb.check("updating", s); err != nil {
		return err
	}
	c := eb.input(s)
	_, err := eb.Client.UpdateSchedule(ctx, &scheduler.UpdateScheduleInput{
		Name:                  c.Name,
		GroupName:             c.GroupName,
		ScheduleExpression:    c.ScheduleExpression,
		FlexibleTimeWindow:    c.FlexibleTimeWindow,
		ActionAfterCompletion: c.ActionAfterCompletion,
		Target:                c.Target,
		Description:           c.Description,
		State:                 c.State,
	})
	if err != nil {
		return fmt.Errorf("updating EventBridge schedule %s: %w", s.ID, mapErr(err))
	}
	return nil
}

// check refuses, before any call, what Scheduler would refuse or what
// could not be what the caller meant.
func (eb *EventBridge) check(doing string, s contracts.Schedule) error {
	if err := ValidName(s.ID); err != nil {
		return err
	}
	if _, err := Parse(s.Expression); err != nil {
		return fmt.Errorf("%s schedule %s: %w", doing, s.ID, err)
	}
	if eb.MaxEventAge != 0 && (eb.MaxEventAge < time.Minute || eb.MaxEventAge > 24*time.Hour) {
		return fmt.Errorf("%s schedule %s: MaxEventAge %v: want 1m to 24h: %w", doing, s.ID, eb.MaxEventAge, contracts.ErrInvalid)
	}
	return nil
}

// Delete deletes the schedule named id. Deleting a schedule that does not
// exist succeeds.
func (eb *EventBridge) Delete(ctx context.Context, id string) error {
	if err := ValidName(id); err != nil {
		return err
	}
	_, err := eb.Client.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{Name: aws.String(id), GroupName: eb.group()})
	var nf *types.ResourceNotFoundException
	if err != nil && !errors.As(err, &nf) {
		return fmt.Errorf("deleting EventBridge schedule %s: %w", id, mapErr(err))
	}
	return nil
}

func (eb *EventBridge) group() *string {
	if eb.Group == "" {
		return nil
	}
	return aws.String(eb.Group)
}

// State is the Scheduler state of s: DISABLED when paused.
func State(s contracts.Schedule) types.ScheduleState {
	if s.Paused {
		return types.ScheduleStateDisabled
	}
	return types.ScheduleStateEnabled
}

// input is the CreateSchedule request for s (Update sends the same
// definition).
func (eb *EventBridge) input(s contracts.Schedule) *scheduler.CreateScheduleInput {
	target := &types.Target{
		Arn:           aws.String(eb.QueueARN),
		RoleArn:       aws.String(eb.RoleARN),
		Input:         aws.String(InputTemplate(s.ID)),
		SqsParameters: &types.SqsParameters{MessageGroupId: aws.String(s.ID)},
	}
	if eb.MaxEventAge > 0 {
		target.RetryPolicy = &types.RetryPolicy{MaximumEventAgeInSeconds: aws.Int32(int32(eb.MaxEventAge / time.Second))}
	}
	if eb.DLQARN != "" {
		target.DeadLetterConfig = &types.DeadLetterConfig{Arn: aws.String(eb.DLQARN)}
	}
	return &scheduler.CreateScheduleInput{
		Name:                  aws.String(s.ID),
		GroupName:             eb.group(),
		ScheduleExpression:    aws.String(s.Expression),
		FlexibleTimeWindow:    &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff},
		ActionAfterCompletion: types.ActionAfterCompletionNone,
		Target:                target,
		Description:           aws.String("cairn workflow " + s.WorkflowID),
		State:                 State(s),
	}
}

// InputTemplate is the target input of a schedule: the JSON of a
// contracts.Message{Kind: QueueWorkflow, SessionID, SubmissionID and
// ScheduleID: the schedule id} whose scheduled_at is ScheduledTimeAttribute,
// which Scheduler replaces with the firing's RFC 3339 time. Written by hand:
// marshalling a Message would write a zero time there.
func InputTemplate(scheduleID string) string {
	kind, _ := json.Marshal(contracts.QueueWorkflow)
	id, _ := json.Marshal(scheduleID)
	return `{"kind":` + string(kind) +
		`,"session_id":` + string(id) +
		`,"submission_id":` + string(id) +
		`,"schedule_id":` + string(id) +
		`,"scheduled_at":"` + ScheduledTimeAttribute + `"}`
}

// ValidName checks an id against EventBridge Scheduler's schedule name
// rules: 1 to 64 characters of [0-9a-zA-Z-_.]. A bad one wraps
// contracts.ErrInvalid.
func ValidName(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("schedule id %q: EventBridge names are 1 to 64 characters, this is %d: %w", id, len(id), contracts.ErrInvalid)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_' || c == '.'
		if !ok {
			return fmt.Errorf("schedule id %q: character %q at %d: EventBridge names allow only [0-9a-zA-Z-_.]: %w", id, c, i, contracts.ErrInvalid)
		}
	}
	return nil
}

// mapErr adds the contracts sentinel an AWS error stands for.
func mapErr(err error) error {
	var (
		validation *types.ValidationException
		notFound   *types.ResourceNotFoundException
		conflict   *types.ConflictException
	)
	switch {
	case errors.As(err, &validation):
		return fmt.Errorf("%w: %w", contracts.ErrInvalid, err)
	case errors.As(err, &notFound):
		return fmt.Errorf("%w: %w", contracts.ErrNotFound, err)
	case errors.As(err, &conflict):
		return fmt.Errorf("%w: %w", contracts.ErrExists, err)
	}
	return err
}
