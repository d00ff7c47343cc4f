package awsmeter_test

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/cairnrun/cairn/shared/aws/awsmeter"
	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/meter"
	"github.com/cairnrun/cairn/shared/pricing"
	"github.com/cairnrun/cairn/shared/testkit/awstest"
)

// TestDynamoDBReportsItsUnits: against the endpoint, the middleware asks
// each item call for its consumed capacity and reports it to the run's
// tally; a failed conditional write counts one unit; calls outside a
// metered run report nowhere and still work.
func TestDynamoDBReportsItsUnits(t *testing.T) {
	cfg := awstest.Config(t)
	cfg.APIOptions = append([]func(*middleware.Stack) error(nil), cfg.APIOptions...)
	awsmeter.Instrument(&cfg)
	db := dynamodb.NewFromConfig(cfg)
	ctx := awstest.Context(t)
	table := awstest.Name(t, "meter")
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(table), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		t.Fatal(err)
	}
	run := meter.Start(ctx, meter.Run{Prices: pricing.Default().AWS, Currency: "USD", Submission: "sub_x", Now: time.Now})
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}
	if _, err := db.PutItem(run, &dynamodb.PutItemInput{TableName: aws.String(table), Item: key}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetItem(run, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	_, err := db.PutItem(run, &dynamodb.PutItemInput{TableName: aws.String(table), Item: key, ConditionExpression: aws.String("attribute_not_exists(pk)")})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("conditional put: %v", err)
	}
	if _, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key}); err != nil { // unmetered
		t.Fatal(err)
	}
	sub := contracts.Submission{ID: "sub_x"}
	meter.Fold(run, &sub)
	o := sub.Orchestration
	// Fold's own estimate is one unit (the largest write reported, ≥ 1).
	if o.DynamoReadUnits <= 0 || o.DynamoWriteUnits < 1+1+1 {
		t.Fatalf("units %+v: want the put's and the get's reported units, and one for the failed conditional put", *o)
	}
}
