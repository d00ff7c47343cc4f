package dynamo

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
)

func TestConditionalWrites(t *testing.T) {
	e := env(t)
	s := e.store(t, Options{})
	ctx := awstest.Context(t)
	p := uniq(t)

	// moto and DynamoDB return the stored item on a failed condition
	// (ALL_OLD), which is how Update* tell a conflict from a missing record.
	sub, _, err := s.CreateSubmission(ctx, newSub(p, p+"-sess", contracts.PhaseAccepted, t0))
	if err != nil {
		t.Fatalf("CreateSubmission: %v", err)
	}
	_, err = e.ddb.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &e.table, Item: key(sessionPK(sub.SessionID), recordSK(sub.ID)),
		ConditionExpression:                 new("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if old, ok := conditionFailed(err); !ok || getN(old, attrVersion) != 1 {
		t.Errorf("failed PutItem with ALL_OLD: err %v, item version %d; want ConditionalCheckFailed with the item", err, getN(old, attrVersion))
	}

	sess, err := s.CreateSession(ctx, contracts.Session{ID: p, CreatedAt: t0})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	tests := []struct {
		name string
		do   func() error
		want error
	}{
		{"submission stale version", func() error { _, err := s.UpdateSubmission(ctx, sub, 7); return err }, contracts.ErrConflict},
		{"submission missing", func() error {
			_, err := s.UpdateSubmission(ctx, newSub(p+"-gone", p+"-sess", contracts.PhaseModel, t0), 1)
			return err
		}, contracts.ErrNotFound},
		{"submission under another session", func() error {
			moved := sub
			moved.SessionID = p + "-other"
			_, err := s.UpdateSubmission(ctx, moved, 1)
			return err
		}, contracts.ErrNotFound},
		{"session stale version", func() error { _, err := s.UpdateSession(ctx, sess, 0); return err }, contracts.ErrConflict},
		{"session missing", func() error {
			_, err := s.UpdateSession(ctx, contracts.Session{ID: p + "-gone"}, 1)
			return err
		}, contracts.ErrNotFound},
		{"session exists", func() error { _, err := s.CreateSession(ctx, sess); return err }, contracts.ErrExists},
	}
	for _, tc := range tests {
		if err := tc.do(); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	if got, err := s.GetSubmission(ctx, sub.ID); err != nil || got.Version != 1 || got.Phase != contracts.PhaseAccepted {
		t.Errorf("after failed updates: version %d phase %s, %v; want version 1 ACCEPTED", got.Version, got.Phase, err)
	}
}

func TestCreateCompletesHalfCreated(t *testing.T) {
	e := env(t)
	s := e.store(t, Options{})
	ctx := awstest.Context(t)
	p := uniq(t)
	// A creator that died right after its claim: only IDEM#key exists.
	first := newSub(p+"-1", p+"-sess", contracts.PhaseAccepted, t0)
	first.IdempotencyKey, first.Version = "k", 1
	rec, err := s.submissionItem(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	claim := with(key(sessionPK(first.SessionID), "IDEM#k"), bodyOf(rec),
		item{attrSession: str(first.SessionID), attrSubmitted: str(first.ID)})
	if err := s.putIfAbsent(ctx, claim); err != nil {
		t.Fatalf("writing the claim: %v", err)
	}
	again := newSub(p+"-2", p+"-sess", contracts.PhaseAccepted, t0)
	again.IdempotencyKey = "k"
	got, created, err := s.CreateSubmission(ctx, again)
	if err != nil || created || got.ID != first.ID || got.Prompt != first.Prompt {
		t.Fatalf("CreateSubmission(same key): id %s created %v err %v; want the first, completed", got.ID, created, err)
	}
	if read, err := s.GetSubmission(ctx, first.ID); err != nil || read.Version != 1 {
		t.Errorf("GetSubmission(completed): %+v, %v", read, err)
	}
	if _, err := s.GetSubmission(ctx, again.ID); !errors.Is(err, contracts.ErrNotFound) {
		t.Errorf("GetSubmission(duplicate): err = %v, want ErrNotFound", err)
	}
}

func TestTTL(t *testing.T) {
	e := env(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s := e.store(t, Options{Clock: fixedClock(now)})
	ctx := awstest.Context(t)
	p := uniq(t)
	if err := s.PutChunks(ctx, p, 0, contracts.ModelEvent{Type: contracts.ModelText, Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, p, contracts.ModelResponse{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendEvents(ctx, contracts.Event{SubmissionID: p, Key: "k", Type: contracts.EventStep}); err != nil {
		t.Fatal(err)
	}
	want := now.Add(DefaultTTL).Unix()
	for _, k := range [][2]string{{streamPK(p), "CHUNK#0000000000"}, {streamPK(p), skDone}, {submissionPK(p), "EVT#k"}} {
		if got := getN(raw(t, e, k[0], k[1]), attrTTL); got != want {
			t.Errorf("ttl of %s/%s = %d, want %d (7 days after the clock)", k[0], k[1], got, want)
		}
	}
}

func TestCreateTableIdempotent(t *testing.T) {
	e := env(t)
	ctx := awstest.Context(t)
	if err := CreateTable(ctx, e.ddb, e.table); err != nil {
		t.Errorf("CreateTable(existing): %v", err)
	}
	if err := EnableTTL(ctx, e.ddb, e.table); err != nil {
		t.Errorf("EnableTTL(enabled): %v", err)
	}
	d, err := e.ddb.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &e.table})
	if err != nil || d.TimeToLiveDescription.TimeToLiveStatus != types.TimeToLiveStatusEnabled ||
		*d.TimeToLiveDescription.AttributeName != TTLAttribute {
		t.Errorf("DescribeTimeToLive = %+v, %v; want enabled on ttl", d.TimeToLiveDescription, err)
	}

	bare := awstest.Name(t, "cairn-bare")
	_, err = e.ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: &bare, BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: new(attrPK), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: new(attrPK), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		t.Fatalf("creating a bare table: %v", err)
	}
	t.Cleanup(func() { e.ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &bare}) })
	if err := CreateTable(ctx, e.ddb, bare); !errors.Is(err, contracts.ErrInvalid) {
		t.Errorf("CreateTable(existing table without indexes): err = %v, want ErrInvalid", err)
	}
}
