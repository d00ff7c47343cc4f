package dynamo

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
)

// A submission record above compactBytes is stored deflated, reads back
// whole through every read path, and a record stored plain (before the
// change) still reads.
func TestSubmissionRecordIsCompacted(t *testing.T) {
	e := env(t)
	s := e.store(t, Options{})
	ctx := awstest.Context(t)
	p := uniq(t)

	sub := newSub(p+"-sub", p+"-sess", contracts.PhaseAccepted, t0)
	sub.Prompt = strings.Repeat("list the files of the workspace and say what each is for; ", 12)
	sub.StreamKey = "st_" + sub.ID + "_1_1"
	sub.Leaf = "nd_" + sub.ID + "_1_assistant"
	got, created, err := s.CreateSubmission(ctx, sub)
	if err != nil || !created {
		t.Fatalf("CreateSubmission: created=%v err=%v", created, err)
	}
	rec := raw(t, e, sessionPK(sub.SessionID), recordSK(sub.ID))
	z, ok := rec[attrBodyZ].(*types.AttributeValueMemberB)
	if !ok || rec[attrBody] != nil {
		t.Fatalf("a %d-byte prompt's record stored without %s", len(sub.Prompt), attrBodyZ)
	}
	if len(z.Value) >= len(sub.Prompt) {
		t.Errorf("compacted body is %d bytes, the prompt alone %d", len(z.Value), len(sub.Prompt))
	}
	got.Phase = contracts.PhaseModel
	if got, err = s.UpdateSubmission(ctx, got, got.Version); err != nil || got.Version != 2 {
		t.Fatalf("UpdateSubmission(compacted): version %d, %v", got.Version, err)
	}
	read, err := s.GetSubmission(ctx, sub.ID)
	if err != nil || read.Prompt != sub.Prompt || read.StreamKey != sub.StreamKey || read.Phase != contracts.PhaseModel {
		t.Fatalf("GetSubmission: %+v, %v", read, err)
	}
	listed, err := s.ListSubmissions(ctx, sub.SessionID, contracts.PhaseModel, 0)
	if err != nil || len(listed) != 1 || listed[0].Prompt != sub.Prompt {
		t.Fatalf("ListSubmissions: %d, %v", len(listed), err)
	}

	// a record as stored before compaction: the body as a string
	plain, err := s.encode(ctx, read)
	if err != nil {
		t.Fatal(err)
	}
	if plain[attrBody] == nil {
		t.Fatal("encode compacted: only submission records are compacted")
	}
	old := with(key(sessionPK(sub.SessionID), recordSK(sub.ID)), plain, item{attrVersion: num(read.Version), attrPhase: str(string(read.Phase))})
	if _, err := e.ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: &e.table, Item: old}); err != nil {
		t.Fatal(err)
	}
	if again, err := s.GetSubmission(ctx, sub.ID); err != nil || again.Prompt != sub.Prompt {
		t.Fatalf("GetSubmission(plain body): %v", err)
	}
}

// A lost answer's retry recognises its own compacted write.
func TestMineComparesCompactedBodies(t *testing.T) {
	body := compact(item{attrBody: str(`{"prompt":"` + strings.Repeat("abc ", 300) + `"}`)})
	if body[attrBodyZ] == nil {
		t.Fatal("a 1.2 KB body was not compacted")
	}
	it := stamped(with(key("P", "S"), body, item{attrVersion: num(3)}))
	if !mine(it, it) {
		t.Error("mine(item, itself) = false")
	}
	other := with(it, compact(item{attrBody: str(`{"prompt":"` + strings.Repeat("abd ", 300) + `"}`)}))
	if mine(other, it) {
		t.Error("mine(another body, item) = true")
	}
	if text, err := bodyText(it); err != nil || !strings.HasPrefix(text, `{"prompt":"abc abc`) {
		t.Errorf("bodyText = %.20q, %v", text, err)
	}
}
