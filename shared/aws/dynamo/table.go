package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Table layout, for infrastructure code that creates the table itself.
const (
	// GSI is the sparse, sharded global index (gsi1pk HASH, gsi1sk RANGE,
	// projection ALL) behind ListSessions, ListUnfinished,
	// ListUnfinishedRuns and ListSchedules.
	GSI = "gsi1"
	// LSI is the local index (pk HASH, lsk RANGE, projection ALL) behind
	// ListSubmissions by phase and ListEvents by seq.
	LSI = "lsi1"
	// TTLAttribute holds the expiry (epoch seconds) of stream chunks and
	// events.
	TTLAttribute = "ttl"
)

// CreateTable creates the table with on-demand billing, the key schema
// pk (S, HASH) + sk (S, RANGE), GSI and LSI, and waits until it is ACTIVE.
// If the table exists it only waits, after checking that both indexes are
// there (ErrInvalid otherwise).
func CreateTable(ctx context.Context, client *dynamodb.Client, name string) error {
	s := types.ScalarAttributeTypeS
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   &name,
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: new(attrPK), AttributeType: s},
			{AttributeName: new(attrSK), AttributeType: s},
			{AttributeName: new(attrGSIPK), AttributeType: s},
			{AttributeName: new(attrGSISK), AttributeType: s},
			{AttributeName: new(attrLSK), AttributeType: s},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: new(attrPK), KeyType: types.KeyTypeHash},
			{AttributeName: new(attrSK), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: new(GSI),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: new(attrGSIPK), KeyType: types.KeyTypeHash},
				{AttributeName: new(attrGSISK), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
		LocalSecondaryIndexes: []types.LocalSecondaryIndex{{
			IndexName: new(LSI),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: new(attrPK), KeyType: types.KeyTypeHash},
				{AttributeName: new(attrLSK), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
	})
	var inUse *types.ResourceInUseException
	existed := errors.As(err, &inUse)
	if err != nil && !existed {
		return fmt.Errorf("creating table %s: %w", name, err)
	}
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 500 * time.Millisecond
		o.MaxDelay = 5 * time.Second
	})
	out, err := w.WaitForOutput(ctx, &dynamodb.DescribeTableInput{TableName: &name}, 5*time.Minute)
	if err != nil {
		return fmt.Errorf("waiting for table %s to be active: %w", name, err)
	}
	if existed {
		return checkIndexes(name, out.Table)
	}
	return nil
}

// checkIndexes refuses an existing table that lacks the indexes.
func checkIndexes(name string, t *types.TableDescription) error {
	var have []string
	for _, g := range t.GlobalSecondaryIndexes {
		have = append(have, *g.IndexName)
	}
	for _, l := range t.LocalSecondaryIndexes {
		have = append(have, *l.IndexName)
	}
	for _, want := range []string{GSI, LSI} {
		if !slices.Contains(have, want) {
			return fmt.Errorf("table %s exists without index %s: %w", name, want, contracts.ErrInvalid)
		}
	}
	return nil
}

// EnableTTL turns on time-to-live on the ttl attribute; a no-op if it is
// already on.
func EnableTTL(ctx context.Context, client *dynamodb.Client, name string) error {
	d, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &name})
	if err != nil {
		return fmt.Errorf("describing time to live of table %s: %w", name, err)
	}
	if desc := d.TimeToLiveDescription; desc != nil && desc.AttributeName != nil && *desc.AttributeName == TTLAttribute &&
		(desc.TimeToLiveStatus == types.TimeToLiveStatusEnabled || desc.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: &name,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: new(TTLAttribute), Enabled: new(true),
		},
	})
	if err != nil {
		return fmt.Errorf("enabling time to live on table %s: %w", name, err)
	}
	return nil
}
