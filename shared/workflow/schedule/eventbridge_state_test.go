package schedule_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
	"github.com/cairnrun/cairn/shared/workflow/schedule"
)

// Update refuses invalid input before any call (the nil client would
// panic), as Create does.
func TestEventBridgeUpdateRefusesBeforeCalling(t *testing.T) {
	eb := &schedule.EventBridge{}
	for _, s := range []contracts.Schedule{
		{ID: "bad id", Expression: "rate(5 minutes)", Paused: true},
		{ID: "sch_1", Expression: "rate(5 seconds)", Paused: true},
	} {
		if err := eb.Update(t.Context(), s); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("Update(%+v) = %v, want ErrInvalid", s, err)
		}
	}
}

// TestEventBridgeLocalPauseResumeDelete: pausing disables the schedule and
// keeps its whole definition, resuming enables it again, an update never
// creates a schedule, and delete is idempotent — against the local
// endpoint.
func TestEventBridgeLocalPauseResumeDelete(t *testing.T) {
	cfg := awstest.Config(t)
	ctx := awstest.Context(t)
	client := scheduler.NewFromConfig(cfg)
	group := awstest.Name(t, "cairn-pause")
	if _, err := client.CreateScheduleGroup(ctx, &scheduler.CreateScheduleGroupInput{Name: aws.String(group)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteScheduleGroup(t.Context(), &scheduler.DeleteScheduleGroupInput{Name: aws.String(group)})
	})
	queueARN := "arn:aws:sqs:us-east-1:123456789012:" + group + "-workflow.fifo"
	roleARN := "arn:aws:iam::123456789012:role/" + group + "-scheduler"
	dlqARN := "arn:aws:sqs:us-east-1:123456789012:" + group + "-scheduler-dlq"
	eb := &schedule.EventBridge{Client: client, Group: group, RoleARN: roleARN, QueueARN: queueARN, MaxEventAge: 2 * time.Hour, DLQARN: dlqARN}
	s := contracts.Schedule{ID: "sch_" + strings.ReplaceAll(group, "-", "_"), WorkflowID: "wf_1", Expression: "rate(5 minutes)"}
	get := func() *scheduler.GetScheduleOutput {
		t.Helper()
		got, err := client.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(s.ID), GroupName: aws.String(group)})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// whole checks that the definition Create made survived an update.
	whole := func(what string, got *scheduler.GetScheduleOutput) {
		t.Helper()
		tg := got.Target
		switch {
		case aws.ToString(got.ScheduleExpression) != s.Expression:
			t.Errorf("%s: expression %q", what, aws.ToString(got.ScheduleExpression))
		case aws.ToString(got.GroupName) != group:
			t.Errorf("%s: group %q", what, aws.ToString(got.GroupName))
		case got.FlexibleTimeWindow == nil || got.FlexibleTimeWindow.Mode != types.FlexibleTimeWindowModeOff:
			t.Errorf("%s: flexible time window %+v", what, got.FlexibleTimeWindow)
		case tg == nil:
			t.Fatalf("%s: no target", what)
		case aws.ToString(tg.Arn) != queueARN || aws.ToString(tg.RoleArn) != roleARN:
			t.Errorf("%s: target %q role %q", what, aws.ToString(tg.Arn), aws.ToString(tg.RoleArn))
		case aws.ToString(tg.Input) != schedule.InputTemplate(s.ID):
			t.Errorf("%s: input %q", what, aws.ToString(tg.Input))
		case tg.SqsParameters == nil || aws.ToString(tg.SqsParameters.MessageGroupId) != s.ID:
			t.Errorf("%s: sqs parameters %+v", what, tg.SqsParameters)
		case tg.RetryPolicy == nil || aws.ToInt32(tg.RetryPolicy.MaximumEventAgeInSeconds) != 7200:
			t.Errorf("%s: retry policy %+v", what, tg.RetryPolicy)
		case tg.DeadLetterConfig == nil || aws.ToString(tg.DeadLetterConfig.Arn) != dlqARN:
			t.Errorf("%s: dead-letter config %+v", what, tg.DeadLetterConfig)
		}
	}

	if err := eb.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	if got := get(); got.State != types.ScheduleStateEnabled {
		t.Fatalf("created: state %q, want ENABLED", got.State)
	}
	paused := s
	paused.Paused = true
	for range 2 { // pausing a paused schedule is no error
		if err := eb.Update(ctx, paused); err != nil {
			t.Fatalf("pause: %v", err)
		}
		got := get()
		if got.State != types.ScheduleStateDisabled {
			t.Fatalf("paused: state %q, want DISABLED", got.State)
		}
		whole("paused", got)
	}
	if err := eb.Update(ctx, s); err != nil {
		t.Fatalf("resume: %v", err)
	}
	got := get()
	if got.State != types.ScheduleStateEnabled {
		t.Fatalf("resumed: state %q, want ENABLED", got.State)
	}
	whole("resumed", got)

	if err := eb.Delete(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	_, err := client.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(s.ID), GroupName: aws.String(group)})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("GetSchedule after Delete = %v, want ResourceNotFoundException", err)
	}
	if err := eb.Delete(ctx, s.ID); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	// A resume that lost the race to a delete: not found, and nothing
	// created.
	if err := eb.Update(ctx, s); !errors.Is(err, contracts.ErrNotFound) {
		t.Fatalf("Update after Delete = %v, want ErrNotFound", err)
	}
	_, err = client.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(s.ID), GroupName: aws.String(group)})
	if !errors.As(err, &nf) {
		t.Fatalf("GetSchedule after a late Update = %v, want ResourceNotFoundException (an update never creates)", err)
	}
}
