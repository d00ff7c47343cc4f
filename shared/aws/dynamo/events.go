package dynamo

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Events of a submission live in its partition SUB#<id>:
//
//   - EVTSEQ: the last seq handed out (attribute n), advanced with ADD;
//   - EVT#<key>: one event, create-if-absent (the key guard and the event
//     are the same item), with seq (N) and lsk = EVT#<seq, 20 digits> for
//     the LSI that orders them.
//
// AppendEvents reserves a block of seqs with one ADD, then puts the events
// in order, each conditional on attribute_not_exists: a repeated key is a
// no-op and its reserved seq a gap. No transaction: a crash between the ADD
// and a put leaves a gap, never a duplicate. A Store serialises its own
// appends per submission (striped locks), so within one process events
// become visible in seq order; two processes appending to one submission at
// once may make a later seq visible a moment before an earlier one (a
// submission's events come from its lease holder, so this is rare).

const (
	skEventSeq  = "EVTSEQ"
	eventPrefix = "EVT#"
	attrSeq     = "seq"
	attrCounter = "n"
)

func eventLSK(seq int64) string { return fmt.Sprintf("%s%020d", eventPrefix, seq) }

// AppendEvents appends evs in order, each unless an event with its
// (SubmissionID, Key) exists. The store assigns Seq (per submission,
// strictly increasing in commit order); e.Seq is ignored. Key is required.
func (s *Store) AppendEvents(ctx context.Context, evs ...contracts.Event) error {
	var order []string
	bySub := map[string][]contracts.Event{}
	for _, e := range evs {
		if e.SubmissionID == "" || e.Key == "" {
			return fmt.Errorf("appending event %q of submission %q: empty submission id or key: %w",
				e.Key, e.SubmissionID, contracts.ErrInvalid)
		}
		if _, ok := bySub[e.SubmissionID]; !ok {
			order = append(order, e.SubmissionID)
		}
		bySub[e.SubmissionID] = append(bySub[e.SubmissionID], e)
	}
	for _, sub := range order {
		if err := s.appendEvents(ctx, sub, bySub[sub]); err != nil {
			return fmt.Errorf("appending %d events of submission %s: %w", len(bySub[sub]), sub, err)
		}
	}
	return nil
}

func (s *Store) appendEvents(ctx context.Context, sub string, evs []contracts.Event) error {
	mu := &s.appendMu[shard(sub)%len(s.appendMu)]
	mu.Lock()
	defer mu.Unlock()
	pk := submissionPK(sub)
	var pending []item // event items without seq, first of each key only
	seen := map[string]bool{}
	for _, e := range evs {
		if seen[e.Key] {
			continue
		}
		seen[e.Key] = true
		e.Seq = 0
		body, err := s.encode(ctx, e)
		if err != nil {
			return fmt.Errorf("event %s: %w", e.Key, err)
		}
		pending = append(pending, with(key(pk, eventPrefix+e.Key), body))
	}
	if len(pending) == 0 {
		return nil
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 s.table,
		Key:                       key(pk, skEventSeq),
		UpdateExpression:          new("ADD #n :k SET #ttl = :ttl"),
		ExpressionAttributeNames:  map[string]string{"#n": attrCounter, "#ttl": attrTTL},
		ExpressionAttributeValues: item{":k": num(int64(len(pending))), ":ttl": s.ttl()},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return fmt.Errorf("reserving %d seqs: %w", len(pending), err)
	}
	first := getN(out.Attributes, attrCounter) - int64(len(pending)) + 1
	for i, it := range pending {
		seq := first + int64(i)
		it = with(it, item{attrSeq: num(seq), attrLSK: str(eventLSK(seq)), attrTTL: s.ttl()})
		if err := s.putIfAbsent(ctx, it); err != nil {
			return fmt.Errorf("putting event %s: %w", getS(it, attrSK), err)
		}
	}
	return nil
}

// ListEvents returns up to limit (≤ 0: all) events of the submission with
// Seq > after, in Seq order: a consistent Query of the LSI range
// EVT#<after+1> … EVT#<max>.
func (s *Store) ListEvents(ctx context.Context, submissionID string, after int64, limit int) ([]contracts.Event, error) {
	after = max(after, 0)
	var out []contracts.Event
	err := s.query(ctx, &dynamodb.QueryInput{
		IndexName:              new(LSI),
		ConsistentRead:         new(true),
		KeyConditionExpression: new("pk = :pk AND lsk BETWEEN :from AND :to"),
		ExpressionAttributeValues: item{
			":pk":   str(submissionPK(submissionID)),
			":from": str(eventLSK(after + 1)),
			":to":   str(eventPrefix + strings.Repeat("9", 20)),
		},
	}, limit, func(it item) (bool, error) {
		var e contracts.Event
		if err := s.decode(ctx, it, &e); err != nil {
			return false, fmt.Errorf("decoding event %s: %w", getS(it, attrSK), err)
		}
		e.Seq, e.Key = getN(it, attrSeq), strings.TrimPrefix(getS(it, attrSK), eventPrefix)
		out = append(out, e)
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing events of submission %s: %w", submissionID, err)
	}
	return out, nil
}
