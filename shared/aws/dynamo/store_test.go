package dynamo

import (
	"crypto/rand"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
)

// uniq returns an id prefix unique to this test and run.
func uniq(t *testing.T) string {
	return strings.ReplaceAll(t.Name(), "/", "-") + "-" + strings.ToLower(rand.Text()[:8])
}

var t0 = time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.UTC)

func newSub(id, session string, phase contracts.Phase, updated time.Time) contracts.Submission {
	return contracts.Submission{ID: id, SessionID: session, Phase: phase, Prompt: "p " + id, CreatedAt: t0, UpdatedAt: updated}
}

// raw reads an item as stored.
func raw(t *testing.T, e *testEnv, pk, sk string) item {
	t.Helper()
	out, err := e.ddb.GetItem(awstest.Context(t), &dynamodb.GetItemInput{
		TableName: &e.table, Key: key(pk, sk), ConsistentRead: new(true),
	})
	if err != nil {
		t.Fatalf("GetItem(%s, %s): %v", pk, sk, err)
	}
	return out.Item
}

// big is n bytes of printable text that survives JSON unchanged.
func big(n int) string { return strings.Repeat("0123456789abcdef", n/16+1)[:n] }

func TestClaimCheckRoundTrips(t *testing.T) {
	e := env(t)
	s := e.store(t, Options{})
	ctx := awstest.Context(t)
	p := uniq(t)

	sub := newSub(p+"-sub", p+"-sess", contracts.PhaseAccepted, t0)
	sub.Prompt = big(300 << 10)
	got, created, err := s.CreateSubmission(ctx, sub)
	if err != nil || !created {
		t.Fatalf("CreateSubmission(300 KiB prompt): created=%v err=%v", created, err)
	}
	rec := raw(t, e, sessionPK(sub.SessionID), recordSK(sub.ID))
	if getS(rec, attrBlob) == "" || rec[attrBody] != nil {
		t.Errorf("300 KiB submission stored inline, want a claim check: %v", reflect.ValueOf(rec).MapKeys())
	}
	read, err := s.GetSubmission(ctx, sub.ID)
	if err != nil || read.Prompt != sub.Prompt {
		t.Fatalf("GetSubmission: %d-byte prompt, err %v; want the 300 KiB prompt", len(read.Prompt), err)
	}
	got.Phase = contracts.PhaseModel
	if got, err = s.UpdateSubmission(ctx, got, got.Version); err != nil || got.Version != 2 {
		t.Fatalf("UpdateSubmission(claim-checked): version %d, %v", got.Version, err)
	}
	for name, list := range map[string]func() ([]contracts.Submission, error){
		"ListSubmissions": func() ([]contracts.Submission, error) {
			return s.ListSubmissions(ctx, sub.SessionID, contracts.PhaseModel, 0)
		},
		"ListUnfinished": func() ([]contracts.Submission, error) { return s.ListUnfinished(ctx, 0) },
	} {
		subs, err := list()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		found := false
		for _, x := range subs {
			found = found || x.ID == sub.ID && x.Prompt == sub.Prompt && x.Version == 2
		}
		if !found {
			t.Errorf("%s does not return the claim-checked submission at version 2", name)
		}
	}

	result := contracts.ToolResult{CallID: "c1", Content: big(1 << 20)}
	if err := s.PutToolResult(ctx, sub.ID, 0, result); err != nil {
		t.Fatalf("PutToolResult(1 MiB): %v", err)
	}
	if err := s.PutToolResult(ctx, sub.ID, 0, contracts.ToolResult{CallID: "c1", Content: "second"}); err != nil {
		t.Fatalf("PutToolResult(again): %v", err)
	}
	recs, err := s.ToolRecords(ctx, sub.ID, 0)
	if err != nil || recs["c1"].Result == nil || *recs["c1"].Result != result {
		t.Errorf("ToolRecords after a 1 MiB result: err %v, result kept = %v", err, recs["c1"].Result != nil && *recs["c1"].Result == result)
	}

	node := contracts.Node{ID: p + "-node", SessionID: sub.SessionID, SubmissionID: sub.ID, Role: contracts.RoleUser,
		Blocks: []contracts.Block{{Type: contracts.BlockText, Text: big(500 << 10)}}, CreatedAt: t0}
	if err := s.PutNode(ctx, node); err != nil {
		t.Fatalf("PutNode(500 KiB): %v", err)
	}
	path, err := s.Path(ctx, node.ID)
	if err != nil || len(path) != 1 || path[0].Blocks[0].Text != node.Blocks[0].Text {
		t.Errorf("Path(500 KiB node): %d nodes, %v", len(path), err)
	}

	ev := contracts.Event{SubmissionID: sub.ID, Key: "big", Type: contracts.EventTextDelta, Text: big(200 << 10), At: t0}
	if err := s.AppendEvents(ctx, ev); err != nil {
		t.Fatalf("AppendEvents(200 KiB): %v", err)
	}
	evs, err := s.ListEvents(ctx, sub.ID, 0, 0)
	if err != nil || len(evs) != 1 || evs[0].Text != ev.Text || evs[0].Key != "big" {
		t.Errorf("ListEvents after a 200 KiB event: %d events, %v", len(evs), err)
	}
	if err := s.PutChunks(ctx, p+"-stream", 0, contracts.ModelEvent{Type: contracts.ModelText, Text: big(150 << 10)}); err != nil {
		t.Fatalf("PutChunks(150 KiB): %v", err)
	}
	if st, err := s.GetStream(ctx, p+"-stream"); err != nil || len(st.Chunks) != 1 || len(st.Chunks[0].Text) != 150<<10 {
		t.Errorf("GetStream after a 150 KiB chunk: %+v, %v", len(st.Chunks), err)
	}
}

func TestClaimCheckWithoutBlobStore(t *testing.T) {
	e := env(t)
	s, err := New(e.ddb, Options{Table: e.table})
	if err != nil {
		t.Fatal(err)
	}
	p := uniq(t)
	sub := newSub(p, p+"-sess", contracts.PhaseAccepted, t0)
	sub.Prompt = big(200 << 10)
	if _, _, err := s.CreateSubmission(awstest.Context(t), sub); !errors.Is(err, contracts.ErrTooLarge) {
		t.Errorf("CreateSubmission(200 KiB, no blob store): err = %v, want ErrTooLarge", err)
	}
}

func TestNewRejects(t *testing.T) {
	e := env(t)
	for name, opts := range map[string]Options{
		"no table":       {},
		"huge threshold": {Table: "t", ClaimCheckBytes: 400 << 10},
	} {
		if _, err := New(e.ddb, opts); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("New(%s): err = %v, want ErrInvalid", name, err)
		}
	}
}
