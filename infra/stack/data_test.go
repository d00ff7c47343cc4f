package stack_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/cairnrun/cairn/infra/stack"
)

// The table has the runtime's key schema and both indexes, on demand.
func TestTableKeysAndIndexes(t *testing.T) {
	for _, tp := range all(t) {
		key := func(name, typ string) map[string]any { return map[string]any{"AttributeName": name, "KeyType": typ} }
		must(t, tp.name+" table", func() {
			tp.a.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(1))
			tp.a.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
				"BillingMode": "PAY_PER_REQUEST",
				"KeySchema":   []any{key(stack.AttrPK, "HASH"), key(stack.AttrSK, "RANGE")},
				"AttributeDefinitions": assertions.Match_ArrayWith(&[]any{
					map[string]any{"AttributeName": stack.AttrPK, "AttributeType": "S"},
					map[string]any{"AttributeName": stack.AttrSK, "AttributeType": "S"},
					map[string]any{"AttributeName": stack.AttrGSIPK, "AttributeType": "S"},
					map[string]any{"AttributeName": stack.AttrGSISK, "AttributeType": "S"},
					map[string]any{"AttributeName": stack.AttrLSK, "AttributeType": "S"},
				}),
				"GlobalSecondaryIndexes": []any{map[string]any{
					"IndexName":  stack.IndexGSI,
					"KeySchema":  []any{key(stack.AttrGSIPK, "HASH"), key(stack.AttrGSISK, "RANGE")},
					"Projection": map[string]any{"ProjectionType": "ALL"},
				}},
				"LocalSecondaryIndexes": []any{map[string]any{
					"IndexName":  stack.IndexLSI,
					"KeySchema":  []any{key(stack.AttrPK, "HASH"), key(stack.AttrLSK, "RANGE")},
					"Projection": map[string]any{"ProjectionType": "ALL"},
				}},
			})
		})
	}
}

// The journal has point-in-time recovery, and TTL on the runtime's ttl
// attribute.
func TestTablePointInTimeRecoveryAndTTL(t *testing.T) {
	for _, tp := range all(t) {
		must(t, tp.name+" table", func() {
			tp.a.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
				"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
				"TimeToLiveSpecification":          map[string]any{"AttributeName": stack.TTLAttribute, "Enabled": true},
			})
		})
	}
}

// prod keeps its data (retain + deletion protection) and logs for three
// months; dev is disposable and keeps logs a week.
func TestStageDecidesRetentionAndProtection(t *testing.T) {
	dev, prod, _ := stacks(t)
	for _, c := range []struct {
		tp        *tmpl
		deletion  string
		protected bool
		days      float64
	}{{dev, "Delete", false, 7}, {prod, "Retain", true, 90}} {
		table := c.tp.id(c.tp.s.Table)
		if got := c.tp.res[table].Deletion; got != c.deletion {
			t.Errorf("%s table DeletionPolicy %q, want %q", c.tp.name, got, c.deletion)
		}
		if got, _ := c.tp.props(table)["DeletionProtectionEnabled"].(bool); got != c.protected {
			t.Errorf("%s table DeletionProtectionEnabled %v, want %v", c.tp.name, got, c.protected)
		}
		for _, id := range []string{c.tp.id(c.tp.s.Bucket), c.tp.id(c.tp.s.Sandbox.Key)} {
			if got := c.tp.res[id].Deletion; got != c.deletion {
				t.Errorf("%s %s DeletionPolicy %q, want %q", c.tp.name, id, got, c.deletion)
			}
		}
		for _, id := range c.tp.ofType("AWS::Logs::LogGroup") {
			if got := num(c.tp.props(id)["RetentionInDays"]); got != c.days {
				t.Errorf("%s log group %s retention %v days, want %v", c.tp.name, id, got, c.days)
			}
		}
	}
}

// Every log group the stack creates has a retention period.
func TestEveryLogGroupHasRetention(t *testing.T) {
	for _, tp := range all(t) {
		groups := tp.ofType("AWS::Logs::LogGroup")
		if len(groups) < len(stack.Functions) {
			t.Errorf("%s: %d log groups, want one per function at least", tp.name, len(groups))
		}
		for _, id := range groups {
			if num(tp.props(id)["RetentionInDays"]) <= 0 {
				t.Errorf("%s: log group %s has no retention", tp.name, id)
			}
		}
	}
}

// The claim-check bucket is encrypted, private and TLS-only.
func TestBucketEncryptedPrivateTLSOnly(t *testing.T) {
	for _, tp := range all(t) {
		must(t, tp.name+" bucket", func() {
			tp.a.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
				"BucketEncryption": map[string]any{"ServerSideEncryptionConfiguration": []any{
					map[string]any{"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"}},
				}},
				"PublicAccessBlockConfiguration": map[string]any{
					"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
				},
			})
			tp.a.HasResourceProperties(jsii.String("AWS::S3::BucketPolicy"), map[string]any{
				"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
					"Effect":    "Deny",
					"Action":    "s3:*",
					"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
				})})},
			})
		})
	}
}
