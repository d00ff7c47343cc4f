package schedule_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/ids"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
	"github.com/cairnrun/cairn/shared/workflow/schedule"
)

// Scheduler replaces the context attribute with the firing's time; after
// that the input must be a Message the workflow driver can read.
func TestInputTemplateSubstituted(t *testing.T) {
	const id = "sch_0193a4b2c3d4_000001_abcd1234"
	tmpl := schedule.InputTemplate(id)
	if !strings.Contains(tmpl, `"scheduled_at":"<aws.scheduler.scheduled-time>"`) {
		t.Fatalf("template %s lacks the scheduled-time attribute", tmpl)
	}
	body := strings.ReplaceAll(tmpl, schedule.ScheduledTimeAttribute, "2026-11-29T12:05:00Z")
	var m contracts.Message
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("substituted input %s: %v", body, err)
	}
	at := time.Date(2026, 11, 29, 12, 5, 0, 0, time.UTC)
	want := contracts.Message{Kind: contracts.QueueWorkflow, SessionID: id, SubmissionID: id, ScheduleID: id, ScheduledAt: at}
	if m != want {
		t.Fatalf("got %+v, want %+v", m, want)
	}
	// The driver derives the same run id the local ticker does.
	if ids.ScheduledRun(m.ScheduleID, m.ScheduledAt) != ids.ScheduledRun(id, at) {
		t.Error("run ids differ")
	}
	// Two firings differ in content, so SQS content-based deduplication
	// keeps both, and drops a duplicate delivery of one.
	other := strings.ReplaceAll(tmpl, schedule.ScheduledTimeAttribute, "2026-11-29T12:10:00Z")
	if other == body {
		t.Error("two firings have the same body")
	}
}

func TestValidName(t *testing.T) {
	for _, id := range []string{"sch_0193a4b2c3d4_000001_abcd1234", "a", "A-b_c.9", strings.Repeat("x", 64)} {
		if err := schedule.ValidName(id); err != nil {
			t.Errorf("ValidName(%q) = %v", id, err)
		}
	}
	for _, id := range []string{"", strings.Repeat("x", 65), "a b", "sch/1", "sch:1", "é"} {
		if err := schedule.ValidName(id); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("ValidName(%q) = %v, want ErrInvalid", id, err)
		}
	}
}

// Invalid input is refused before any call (the nil client would panic).
func TestEventBridgeRefusesBeforeCalling(t *testing.T) {
	eb := &schedule.EventBridge{}
	ctx := t.Context()
	for _, s := range []contracts.Schedule{
		{ID: "bad id", Expression: "rate(5 minutes)"},
		{ID: "sch_1", Expression: "rate(5 seconds)"},
		{ID: "sch_1", Expression: "cron(0 12 L * ? *)"},
	} {
		if err := eb.Create(ctx, s); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("Create(%+v) = %v, want ErrInvalid", s, err)
		}
	}
	eb.MaxEventAge = 30 * time.Second
	if err := eb.Create(ctx, contracts.Schedule{ID: "sch_1", Expression: "rate(5 minutes)"}); !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("Create with MaxEventAge 30s = %v, want ErrInvalid", err)
	}
	if err := eb.Delete(ctx, "bad/id"); !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("Delete = %v, want ErrInvalid", err)
	}
}

// TestEventBridgeLocal runs the adapter against the local endpoint (moto's
// Scheduler stores schedules and never fires them).
func TestEventBridgeLocal(t *testing.T) {
	cfg := awstest.Config(t)
	ctx := awstest.Context(t)
	client := scheduler.NewFromConfig(cfg)
	group := awstest.Name(t, "cairn-sched")
	if _, err := client.CreateScheduleGroup(ctx, &scheduler.CreateScheduleGroupInput{Name: aws.String(group)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteScheduleGroup(t.Context(), &scheduler.DeleteScheduleGroupInput{Name: aws.String(group)})
	})
	queueARN := "arn:aws:sqs:us-east-1:123456789012:" + group + "-workflow.fifo"
	roleARN := "arn:aws:iam::123456789012:role/" + group + "-scheduler"
	eb := &schedule.EventBridge{Client: client, Group: group, RoleARN: roleARN, QueueARN: queueARN, MaxEventAge: time.Hour}
	s := contracts.Schedule{ID: "sch_" + strings.ReplaceAll(group, "-", "_"), WorkflowID: "wf_1", Expression: "cron(0/15 * * * ? *)"}

	if err := eb.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	got, err := client.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(s.ID), GroupName: aws.String(group)})
	if err != nil {
		t.Fatal(err)
	}
	tg := got.Target
	switch {
	case aws.ToString(got.Name) != s.ID || aws.ToString(got.GroupName) != group:
		t.Errorf("name %q group %q", aws.ToString(got.Name), aws.ToString(got.GroupName))
	case aws.ToString(got.ScheduleExpression) != s.Expression:
		t.Errorf("expression %q", aws.ToString(got.ScheduleExpression))
	case got.FlexibleTimeWindow == nil || got.FlexibleTimeWindow.Mode != types.FlexibleTimeWindowModeOff:
		t.Errorf("flexible time window %+v", got.FlexibleTimeWindow)
	case got.ActionAfterCompletion != types.ActionAfterCompletionNone:
		t.Errorf("action after completion %q", got.ActionAfterCompletion)
	case tg == nil:
		t.Fatal("no target")
	case aws.ToString(tg.Arn) != queueARN || aws.ToString(tg.RoleArn) != roleARN:
		t.Errorf("target %q role %q", aws.ToString(tg.Arn), aws.ToString(tg.RoleArn))
	case aws.ToString(tg.Input) != schedule.InputTemplate(s.ID):
		t.Errorf("input %q", aws.ToString(tg.Input))
	case tg.SqsParameters == nil || aws.ToString(tg.SqsParameters.MessageGroupId) != s.ID:
		t.Errorf("sqs parameters %+v", tg.SqsParameters)
	case tg.RetryPolicy == nil || aws.ToInt32(tg.RetryPolicy.MaximumEventAgeInSeconds) != 3600:
		t.Errorf("retry policy %+v", tg.RetryPolicy)
	}

	// Idempotent: the same schedule again is success; another expression
	// under the same id is ErrExists.
	if err := eb.Create(ctx, s); err != nil {
		t.Fatalf("second Create: %v", err)
	}
	changed := s
	changed.Expression = "rate(1 hour)"
	if err := eb.Create(ctx, changed); !errors.Is(err, contracts.ErrExists) {
		t.Fatalf("Create with another expression = %v, want ErrExists", err)
	}

	if err := eb.Delete(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	_, err = client.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(s.ID), GroupName: aws.String(group)})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("GetSchedule after Delete = %v, want ResourceNotFoundException", err)
	}
	if err := eb.Delete(ctx, s.ID); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
}
