// Package schedule owns workflow schedules: their expressions (EventBridge
// Scheduler syntax), the local ticker that fires them in `cairn dev`, and
// the EventBridge Scheduler adapter that makes AWS fire them.
//
// A firing starts the run ids.ScheduledRun(schedule id, scheduled time), so
// firing the same (schedule, time) twice — a restarted ticker catching up,
// a duplicate delivery from Scheduler — is the same run. Whoever fires
// must create the run create-if-absent under that id.
//
// It may import shared/contracts, the standard library and the AWS SDK's
// Scheduler client. It starts no runs itself (the Fire function given to
// the Ticker does).
//
// # Expressions
//
// Parse accepts rate(N minute|minutes|hour|hours|day|days) — singular unit
// for 1, plural otherwise, as EventBridge wants; N ≥ 1, so nothing below a
// minute — and cron(minutes hours day-of-month month day-of-week year):
//
//	minutes 0-59, hours 0-23, day-of-month 1-31, month 1-12 or JAN-DEC,
//	day-of-week 1-7 or SUN-SAT (1 = SUN, as EventBridge numbers it),
//	year 1970-2199; in each: *, lists a,b, ranges a-b, steps */n, a/n
//	(a to the field's end) and a-b/n; names in any case.
//
// Exactly one of day-of-month and day-of-week must be "?" (and "?" is the
// whole field). Refused with an error wrapping both contracts.ErrInvalid
// and errors.ErrUnsupported: the L, W and # wildcards ("L", "15W", "LW",
// "6L", "3#2") and one-time at(…) expressions. Also refused: wrap-around
// ranges ("FRI-MON", "22-2"), a step larger than its field's range ("*/61"
// in minutes) and an expression over MaxExpressionBytes (256, EventBridge's
// own limit) or not valid UTF-8. Every error wraps contracts.ErrInvalid and
// names the expression, the field and the part at fault. FuzzParse
// (fuzz_test.go, seed corpus in testdata/fuzz/FuzzParse) checks that
// nothing panics and that what is accepted re-parses and evaluates sanely.
//
// Expressions are evaluated in UTC (the adapter sets no time zone, so AWS
// does the same). Expr.Next(anchor, after) is the first firing strictly
// after after. Cron fires on whole minutes and ignores anchor. A rate
// fires at anchor + k·N, k ≥ 1, where anchor is the schedule's CreatedAt:
// the first firing is one period after creation. EventBridge picks its own
// phase for a rate schedule (from when it was created on AWS, to the
// minute), so the local and AWS times of a rate firing may differ; each
// side is consistent with itself, which is all the run id needs.
//
// # Local ticker
//
// Ticker.Tick lists the schedules and fires every firing due since the
// previous tick, oldest first. The last fired time per schedule lives in
// memory; a schedule seen for the first time (every schedule after a
// restart) is caught up from its CreatedAt, bounded to the MaxCatchUp most
// recent firings (DefaultMaxCatchUp = 10 per schedule per tick) — older
// missed firings are skipped and logged. A failed Fire is retried on the
// next tick. Ticker.Run ticks on a time.Ticker until its context ends.
// A paused schedule fires nothing; resumed, it fires only what falls due
// after its UpdatedAt (the resume), as a re-enabled EventBridge schedule
// does — also when a restarted ticker catches up. A schedule no longer
// listed (deleted) is forgotten. Fire re-reads the schedule itself
// (workflow.Driver.Fire), so one paused or deleted between List and Fire
// starts nothing.
//
// # EventBridge Scheduler
//
// EventBridge.Create makes schedule s.ID in Group (names: 1-64 characters
// of [0-9a-zA-Z-_.], checked first, else ErrInvalid) with expression
// s.Expression (checked with Parse first), FlexibleTimeWindow OFF,
// ActionAfterCompletion NONE, and as target the workflow FIFO queue
// QueueARN, assumed through RoleARN, with MessageGroupId = s.ID and Input =
// InputTemplate(s.ID): a contracts.Message{Kind: QueueWorkflow, SessionID,
// SubmissionID, ScheduleID = s.ID} whose scheduled_at is
// "<aws.scheduler.scheduled-time>", which Scheduler replaces with the
// firing's RFC 3339 time. Create is idempotent: an existing schedule of
// that name with the same expression is success, a different expression
// is ErrExists (nothing else is compared). Update (pause and resume)
// sends UpdateSchedule the same whole definition — UpdateSchedule resets
// whatever it is not given — with State DISABLED when s.Paused, else
// ENABLED (Create sets State the same way); an absent schedule is
// ErrNotFound, never created. Delete is idempotent (absent is success).
// The order of these writes against the store's is the caller's (see
// contracts.Scheduler: pause disables first, delete deletes first, resume
// writes the store first).
// Optional: MaxEventAge (the retry policy's MaximumEventAgeInSeconds,
// 1 minute to 24 hours; zero leaves Scheduler's default of 24 hours and
// 185 attempts) and DLQARN (an SQS dead-letter queue for firings Scheduler
// gave up on).
//
// NOTE for infrastructure: SQS FIFO requires a deduplication id on every
// message, and Scheduler's SQS target can set only MessageGroupId. The
// workflow queue therefore needs ContentBasedDeduplication enabled (the
// body differs per firing through scheduled_at, and a duplicate delivery
// of one firing is dropped within the 5-minute window). The runtime's own
// sends still carry explicit MessageDeduplicationIds, which take
// precedence over content-based ones. The role needs sqs:SendMessage on
// the queue (and on DLQARN), plus kms:GenerateDataKey/Decrypt if the queue
// is encrypted with a customer key. The schedule group must exist
// (CreateScheduleGroup; the CDK app owns it on AWS).
//
// Local endpoint (moto 5): CreateSchedule, GetSchedule, UpdateSchedule,
// DeleteSchedule and CreateScheduleGroup work and round-trip every field
// used here (UpdateSchedule ignores ActionAfterCompletion there), a taken
// name is ConflictException, and UpdateSchedule or DeleteSchedule of an
// absent schedule is ResourceNotFoundException. moto never fires schedules and does not
// validate expressions, names or targets (hence Parse and ValidName run
// first, and the input substitution is tested by hand); CreateSchedule in
// a group that does not exist answers HTTP 500 there, where AWS answers
// ResourceNotFoundException (mapped to contracts.ErrNotFound).
//
// # Usage
//
//	e, err := schedule.Parse("cron(0 12 ? * MON-FRI *)")
//	next := e.Next(s.CreatedAt, time.Now())
//
//	// cairn dev
//	tk := &schedule.Ticker{
//		List:  store.ListSchedules,
//		Fire:  func(ctx context.Context, s contracts.Schedule, at time.Time) error {
//			_, _, err := store.CreateRun(ctx, contracts.WorkflowRun{ID: ids.ScheduledRun(s.ID, at), …})
//			return err
//		},
//		Clock: clock,
//		Log:   log,
//	}
//	go tk.Run(ctx, 15*time.Second)
//
//	// AWS
//	eb := &schedule.EventBridge{Client: scheduler.NewFromConfig(cfg), Group: "cairn", RoleARN: role, QueueARN: queue}
//	err = eb.Create(ctx, s) // ErrExists: the id is taken with another expression
//	s.Paused = true
//	err = eb.Update(ctx, s) // DISABLED; ErrNotFound: deleted meanwhile
//	err = eb.Delete(ctx, s.ID)
package schedule
