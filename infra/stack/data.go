package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"
)

// addData creates the journal table and the claim-check bucket.
func (s *Stack) addData() {
	st := s.settings()
	str := awsdynamodb.AttributeType_STRING
	// One table for everything (shared/aws/dynamo): on-demand, so it costs
	// nothing idle but storage; PITR because it is the journal; TTL on the
	// stream chunks and events.
	s.Table = awsdynamodb.NewTable(s.Stack, jsii.String("Journal"), &awsdynamodb.TableProps{
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String(AttrPK), Type: str},
		SortKey:      &awsdynamodb.Attribute{Name: jsii.String(AttrSK), Type: str},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		TimeToLiveAttribute: jsii.String(TTLAttribute),
		DeletionProtection:  jsii.Bool(st.protect),
		RemovalPolicy:       st.removal,
		Encryption:          awsdynamodb.TableEncryption_DEFAULT, // AWS-owned key: encrypted, no KMS requests
	})
	// gsi1: the sparse, sharded index behind ListSessions and the repair
	// scan (ListUnfinished).
	s.Table.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:      jsii.String(IndexGSI),
		PartitionKey:   &awsdynamodb.Attribute{Name: jsii.String(AttrGSIPK), Type: str},
		SortKey:        &awsdynamodb.Attribute{Name: jsii.String(AttrGSISK), Type: str},
		ProjectionType: awsdynamodb.ProjectionType_ALL,
	})
	// lsi1: submissions by phase, events by sequence (strongly consistent).
	s.Table.AddLocalSecondaryIndex(&awsdynamodb.LocalSecondaryIndexProps{
		IndexName:      jsii.String(IndexLSI),
		SortKey:        &awsdynamodb.Attribute{Name: jsii.String(AttrLSK), Type: str},
		ProjectionType: awsdynamodb.ProjectionType_ALL,
	})

	// Claim checks: bodies above an item's size, stored under their hash.
	// Private, encrypted, TLS only. No auto-delete in dev (it would add a
	// custom-resource function): `cdk destroy` of a dev stack needs the
	// bucket emptied first (docs/DEPLOY.md).
	s.Bucket = awss3.NewBucket(s.Stack, jsii.String("Blobs"), &awss3.BucketProps{
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		Versioned:         jsii.Bool(false),
		RemovalPolicy:     st.removal,
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:                                  jsii.String("abort-incomplete-uploads"),
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(1)),
		}},
	})
}
