package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairnrun/cairn/shared/contracts"
)

// A tool record is one item SUB#<submission> / TOOL#<step>#<call id>: a
// started flag and the result (body or claim check), each set at most once.

const attrStarted = "started"

func toolPrefix(step int) string { return fmt.Sprintf("TOOL#%010d#", step) }

// MarkToolStarted records that a call is about to run. Repeating it is
// harmless.
func (s *Store) MarkToolStarted(ctx context.Context, submissionID string, step int, callID string) error {
	if submissionID == "" || callID == "" {
		return fmt.Errorf("marking tool call %q started: empty id: %w", callID, contracts.ErrInvalid)
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 s.table,
		Key:                       key(submissionPK(submissionID), toolPrefix(step)+callID),
		UpdateExpression:          new("SET #started = :true"),
		ExpressionAttributeNames:  map[string]string{"#started": attrStarted},
		ExpressionAttributeValues: item{":true": &types.AttributeValueMemberBOOL{Value: true}},
	})
	if err != nil {
		return fmt.Errorf("marking tool call %s of submission %s step %d started: %w", callID, submissionID, step, err)
	}
	return nil
}

// PutToolResult records a call's result if it has none yet: the first
// result written wins and later ones are dropped without error. A result
// above the claim check threshold goes to the BlobStore first (a losing
// result leaves an unreferenced blob).
func (s *Store) PutToolResult(ctx context.Context, submissionID string, step int, r contracts.ToolResult) error {
	if submissionID == "" || r.CallID == "" {
		return fmt.Errorf("putting tool result %q: empty id: %w", r.CallID, contracts.ErrInvalid)
	}
	body, err := s.encode(ctx, r)
	if err != nil {
		return fmt.Errorf("putting tool result %s of submission %s step %d: %w", r.CallID, submissionID, step, err)
	}
	name := attrBody
	if _, ok := body[attrBlob]; ok {
		name = attrBlob
	}
	update, names, values := "SET #r = :r", map[string]string{"#r": name, "#body": attrBody, "#blob": attrBlob}, item{":r": body[name]}
	if cas, ok := body[attrCAS]; ok { // its shared strings (shared.go)
		update, names["#cas"], values[":cas"] = update+", #cas = :cas", attrCAS, cas
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 s.table,
		Key:                       key(submissionPK(submissionID), toolPrefix(step)+r.CallID),
		UpdateExpression:          &update,
		ConditionExpression:       new("attribute_not_exists(#body) AND attribute_not_exists(#blob)"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	if _, ok := conditionFailed(err); ok {
		return nil // the first result wins
	}
	if err != nil {
		return fmt.Errorf("putting tool result %s of submission %s step %d: %w", r.CallID, submissionID, step, err)
	}
	return nil
}

// ToolRecords returns the step's records keyed by call id (empty map if
// none), with a consistent Query.
func (s *Store) ToolRecords(ctx context.Context, submissionID string, step int) (map[string]contracts.ToolRecord, error) {
	prefix := toolPrefix(step)
	out := map[string]contracts.ToolRecord{}
	err := s.query(ctx, &dynamodb.QueryInput{
		ConsistentRead:            new(true),
		KeyConditionExpression:    new("pk = :pk AND begins_with(sk, :prefix)"),
		ExpressionAttributeValues: item{":pk": str(submissionPK(submissionID)), ":prefix": str(prefix)},
	}, 0, func(it item) (bool, error) {
		rec := contracts.ToolRecord{
			SubmissionID: submissionID, Step: step, CallID: getS(it, attrSK)[len(prefix):],
		}
		if b, ok := it[attrStarted].(*types.AttributeValueMemberBOOL); ok {
			rec.Started = b.Value
		}
		if _, ok := it[attrBody]; ok || getS(it, attrBlob) != "" {
			rec.Result = new(contracts.ToolResult)
			if err := s.decode(ctx, it, rec.Result); err != nil {
				return false, fmt.Errorf("decoding tool result %s: %w", rec.CallID, err)
			}
		}
		out[rec.CallID] = rec
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading tool records of submission %s step %d: %w", submissionID, step, err)
	}
	return out, nil
}
