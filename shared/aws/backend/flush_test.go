package backend_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairnrun/cairn/shared/aws/backend"
	"github.com/cairnrun/cairn/shared/aws/dynamo"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/testkit/awscost"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
	"github.com/cairnrun/cairn/shared/turn"
)

// A text_delta of StreamFlushBytes of text, with ids as long as the
// runtime's and a late step and attempt, is an event item within one
// DynamoDB write unit (1 KB), so it costs one unit and one in lsi1.
func TestStreamFlushBytesFitsAWriteUnit(t *testing.T) {
	awsCfg := awstest.Config(t)
	ctx := context.Background()
	table := awstest.Name(t, "flush")
	ddb := dynamodb.NewFromConfig(awsCfg)
	if err := dynamo.CreateTable(ctx, ddb, table); err != nil {
		t.Fatal(err)
	}
	store, err := dynamo.New(ddb, dynamo.Options{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	sub := "sub_01a2510721d0000000f01e21ac" // the length of an ids.New id
	stream := fmt.Sprintf("st_%s_%d_%d", sub, 999, 99)
	for _, text := range []string{
		bounded(strings.Repeat("lorem ipsum, dolor sit amet; ", 100)),
		bounded(strings.Repeat("if a < b && c > \"d\" {\n\treturn `x` // ✓\n}\n", 100)), // JSON escapes much of it
	} {
		ev := contracts.Event{SubmissionID: sub, Type: contracts.EventTextDelta,
			Step: 999, Attempt: 99, Text: text, At: time.Date(2026, 12, 7, 15, 3, 30, 798954548, time.UTC)}
		for i := range 100 { // the index key is fixed width; the seq number grows a byte per two digits
			ev.Key = fmt.Sprintf("text/%s/%05d", stream, i)
			if err := store.AppendEvents(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
		evs, err := store.ListEvents(ctx, sub, 0, 0)
		if err != nil || len(evs) == 0 || evs[len(evs)-1].Key != ev.Key {
			t.Fatalf("listing the events: %d, %v", len(evs), err)
		}
		out, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, ConsistentRead: new(true), Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "SUB#" + sub}, "sk": &types.AttributeValueMemberS{Value: fmt.Sprintf("EVS#%020d", evs[len(evs)-1].Seq)},
		}})
		if err != nil || out.Item == nil {
			t.Fatalf("reading the event item: %v (found: %v)", err, out != nil && out.Item != nil)
		}
		if n := awscost.Size(out.Item); n > 1024 {
			t.Errorf("a text_delta of %d bytes of text (%d JSON-encoded) is an item of %d bytes: two write units",
				len(text), turn.JSONTextLen(text), n)
		} else {
			t.Logf("item of %d bytes for %d bytes of text (%d JSON-encoded)", n, len(text), turn.JSONTextLen(text))
		}
		stream += "-next"
	}
}

// bounded is the longest prefix of s the engine puts in one text_delta on
// AWS (JSON-encoded, at most StreamFlushBytes).
func bounded(s string) string {
	prev := 0
	for i := range s { // rune starts
		if turn.JSONTextLen(s[:i]) > backend.StreamFlushBytes {
			return s[:prev]
		}
		prev = i
	}
	return s
}
