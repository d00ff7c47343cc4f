package dynamo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Events of a submission live in its partition SUB#<id>:
//
//   - EVTSEQ: the last seq handed out (attribute n), advanced with ADD;
//   - EVT#<key>: one keyed event, create-if-absent (the key guard and the
//     event are the same item), with seq (N) and lsk = EVT#<seq, 20 digits>
//     for the LSI that orders them;
//   - EVS#<seq, 20 digits>: one text_delta, with its key in ekey (S) and
//     no lsk — ordered by its own sort key, it costs no LSI copy.
//
// AppendEvents takes seqs from the Store's reserved block (reserveSeqs: a
// read of the counter, or an ADD reserving a new block), then puts the
// events in order, each conditional on attribute_not_exists: a repeated
// key is a no-op and its reserved seq a gap. No transaction: a crash between the ADD
// and a put leaves a gap, never a duplicate. A Store serialises its own
// appends per submission (striped locks), so within one process events
// become visible in seq order; two processes appending to one submission at
// once may make a later seq visible a moment before an earlier one (a
// submission's events come from its lease holder, so this is rare).
//
// A text_delta is a stream's text, half the items of a turn and most of
// its bytes: an LSI entry for each would write its text twice. Its key is
// the stream's (one per model attempt, text/<stream key>/<n>): no other
// process appends it — a new attempt, a new stream key; a re-driven phase
// resumes a finished stream from its completion marker and appends no text
// — so its repeat is refused by the Store that appended it (it remembers
// the keys of the submissions it appended deltas to, up to 1,000
// submissions at a time: a process streams a few at once) and by the condition on its seq for the SDK's resend of a
// put whose answer was lost. ListEvents merges the two orders by seq.

const (
	skEventSeq   = "EVTSEQ"
	eventPrefix  = "EVT#"
	deltaPrefix  = "EVS#"
	attrSeq      = "seq"
	attrCounter  = "n"
	attrEventKey = "ekey"
)

func eventLSK(seq int64) string { return fmt.Sprintf("%s%020d", eventPrefix, seq) }
func deltaSK(seq int64) string  { return fmt.Sprintf("%s%020d", deltaPrefix, seq) }

// isDelta reports whether e is stored as a text_delta (EVS#<seq>).
func isDelta(e contracts.Event) bool { return e.Type == contracts.EventTextDelta }

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
	type pendingEvent struct {
		it    item // without seq
		delta string
	}
	var pending []pendingEvent // first of each key only
	seen := map[string]bool{}
	for _, e := range evs {
		if seen[e.Key] || isDelta(e) && s.deltaAppended(sub, e.Key) {
			continue
		}
		seen[e.Key] = true
		e.Seq = 0
		body, err := s.encode(ctx, e)
		if err != nil {
			return fmt.Errorf("event %s: %w", e.Key, err)
		}
		if isDelta(e) {
			pending = append(pending, pendingEvent{it: with(body, item{attrEventKey: str(e.Key)}), delta: e.Key})
		} else {
			pending = append(pending, pendingEvent{it: with(key(pk, eventPrefix+e.Key), body)})
		}
	}
	if len(pending) == 0 {
		return nil
	}
	first, err := s.reserveSeqs(ctx, sub, int64(len(pending)))
	if err != nil {
		return err
	}
	for i, p := range pending {
		seq := first + int64(i)
		it := with(p.it, item{attrSeq: num(seq), attrTTL: s.ttl()})
		if p.delta != "" {
			it = with(it, key(pk, deltaSK(seq)))
		} else {
			it[attrLSK] = str(eventLSK(seq))
		}
		if err := s.putIfAbsent(ctx, it); err != nil {
			return fmt.Errorf("putting event %s: %w", getS(it, attrSK), err)
		}
		if p.delta != "" {
			s.rememberDelta(sub, p.delta)
		}
	}
	return nil
}

// deltaAppended reports whether this Store appended the text_delta key of
// sub (the caller holds sub's append lock).
func (s *Store) deltaAppended(sub, key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deltas[sub][key]
}

func (s *Store) rememberDelta(sub, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deltas == nil || len(s.deltas) >= 1_000 && s.deltas[sub] == nil {
		s.deltas = map[string]map[string]bool{}
	}
	if s.deltas[sub] == nil {
		s.deltas[sub] = map[string]bool{}
	}
	s.deltas[sub][key] = true
}

// ListEvents returns up to limit (≤ 0: all) events of the submission with
// Seq > after, in Seq order, merged from two consistent Queries of up to
// limit events each: the text_deltas' range EVS#<after+1> … and then the
// keyed events' LSI range EVT#<after+1> … . Seqs rise in commit order, so
// the first Query saw every text_delta up to the newest event it read;
// but a keyed event read by the second may be newer than a text_delta
// committed between the two — so when the answer ends past the newest
// text_delta read, the text_deltas up to its end are read again (rare
// while text streams, when the newest event is text).
func (s *Store) ListEvents(ctx context.Context, submissionID string, after int64, limit int) ([]contracts.Event, error) {
	after = max(after, 0)
	deltas, err := s.listDeltas(ctx, submissionID, after, 0, limit)
	if err != nil {
		return nil, err
	}
	keyed, err := s.listEvents(ctx, &dynamodb.QueryInput{
		IndexName:              new(LSI),
		ConsistentRead:         new(true),
		KeyConditionExpression: new("pk = :pk AND lsk BETWEEN :from AND :to"),
		ExpressionAttributeValues: item{
			":pk": str(submissionPK(submissionID)), ":from": str(eventLSK(after + 1)), ":to": str(eventPrefix + strings.Repeat("9", 20)),
		},
	}, limit)
	if err != nil {
		return nil, fmt.Errorf("listing events of submission %s: %w", submissionID, err)
	}
	out := mergeEvents(deltas, keyed, limit)
	seen := after // every text_delta up to seen has been read
	if n := len(deltas); n > 0 {
		seen = deltas[n-1].Seq
	}
	if n := len(out); n > 0 && out[n-1].Seq > seen {
		late, err := s.listDeltas(ctx, submissionID, seen, out[n-1].Seq, 0)
		if err != nil {
			return nil, err
		}
		out = mergeEvents(late, out, limit)
	}
	return out, nil
}

// listDeltas returns up to limit text_deltas of the submission with after <
// Seq (≤ to when to > 0), in Seq order.
func (s *Store) listDeltas(ctx context.Context, submissionID string, after, to int64, limit int) ([]contracts.Event, error) {
	end := deltaPrefix + strings.Repeat("9", 20)
	if to > 0 {
		end = deltaSK(to)
	}
	out, err := s.listEvents(ctx, &dynamodb.QueryInput{
		ConsistentRead:         new(true),
		KeyConditionExpression: new("pk = :pk AND sk BETWEEN :from AND :to"),
		ExpressionAttributeValues: item{
			":pk": str(submissionPK(submissionID)), ":from": str(deltaSK(after + 1)), ":to": str(end),
		},
	}, limit)
	if err != nil {
		return nil, fmt.Errorf("listing text of submission %s: %w", submissionID, err)
	}
	return out, nil
}

// mergeEvents merges two lists in Seq order (a seq in both is kept once),
// keeping at most limit (≤ 0: all).
func mergeEvents(a, b []contracts.Event, limit int) []contracts.Event {
	out := make([]contracts.Event, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		switch {
		case len(b) == 0 || len(a) > 0 && a[0].Seq < b[0].Seq:
			out, a = append(out, a[0]), a[1:]
		case len(a) > 0 && a[0].Seq == b[0].Seq:
			out, a, b = append(out, a[0]), a[1:], b[1:]
		default:
			out, b = append(out, b[0]), b[1:]
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// listEvents runs one of ListEvents' Queries: up to limit events in seq order.
func (s *Store) listEvents(ctx context.Context, in *dynamodb.QueryInput, limit int) ([]contracts.Event, error) {
	var out []contracts.Event
	err := s.query(ctx, in, limit, func(it item) (bool, error) {
		var e contracts.Event
		if err := s.decode(ctx, it, &e); err != nil {
			return false, fmt.Errorf("decoding event %s: %w", getS(it, attrSK), err)
		}
		e.Seq, e.Key = getN(it, attrSeq), strings.TrimPrefix(getS(it, attrSK), eventPrefix)
		if k, ok := it[attrEventKey]; ok {
			e.Key = k.(*types.AttributeValueMemberS).Value
		}
		out = append(out, e)
		return true, nil
	})
	return out, err
}

// Seq blocks. A Store reserves seqs a block at a time (one ADD of
// seqBlock to EVTSEQ) and hands them out to its next appends of the
// submission while the counter still ends at its block: a consistent read
// of the counter (a read unit) instead of an ADD (a write unit) per
// append. If any other process reserved since, the counter has moved past
// the block, and this Store reserves a new one — so seqs still rise in
// commit order, as with an ADD per append (the same caveat: two processes
// appending at the very same moment may make a later seq visible a moment
// before an earlier one). The unused rest of a block is a gap, like a
// crash between the ADD and the put. A block is used only for
// seqBlockFor after its reservation, well inside the counter's ttl (which
// each reservation renews), so the counter outlives the events.
const (
	seqBlock    = 64
	seqBlockFor = time.Hour
)

type seqRange struct {
	next, end int64 // next free seq of the block; the counter at reservation
	at        time.Time
}

// reserveSeqs returns the first of k fresh seqs of the submission's events
// (the caller holds the submission's append lock).
func (s *Store) reserveSeqs(ctx context.Context, sub string, k int64) (int64, error) {
	pk := submissionPK(sub)
	s.mu.Lock()
	b, ok := s.seqs[sub]
	s.mu.Unlock()
	if ok && b.end-b.next+1 >= k && s.opts.Clock.Now().Sub(b.at) < seqBlockFor {
		out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: s.table, Key: key(pk, skEventSeq), ConsistentRead: new(true),
			ProjectionExpression: new("#n"), ExpressionAttributeNames: map[string]string{"#n": attrCounter},
		})
		if err != nil {
			return 0, fmt.Errorf("reading the seq counter: %w", err)
		}
		if getN(out.Item, attrCounter) == b.end { // nobody reserved since: the block is still ours
			first := b.next
			b.next += k
			s.rememberSeqs(sub, b)
			return first, nil
		}
	}
	n := max(k, seqBlock)
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 s.table,
		Key:                       key(pk, skEventSeq),
		UpdateExpression:          new("ADD #n :k SET #ttl = :ttl"),
		ExpressionAttributeNames:  map[string]string{"#n": attrCounter, "#ttl": attrTTL},
		ExpressionAttributeValues: item{":k": num(n), ":ttl": s.ttl()},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, fmt.Errorf("reserving %d seqs: %w", n, err)
	}
	end := getN(out.Attributes, attrCounter)
	first := end - n + 1
	s.rememberSeqs(sub, seqRange{next: first + k, end: end, at: s.opts.Clock.Now()})
	return first, nil
}

func (s *Store) rememberSeqs(sub string, b seqRange) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seqs == nil || len(s.seqs) >= 10_000 {
		s.seqs = map[string]seqRange{}
	}
	s.seqs[sub] = b
}
