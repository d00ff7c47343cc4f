package dynamo

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairnrun/cairn/shared/contracts"
)

const skSession = "SESSION"

func sessionPK(id string) string { return "SESS#" + id }

// sessionItem is the full item of sess (the caller sets Version).
func (s *Store) sessionItem(ctx context.Context, sess contracts.Session) (item, error) {
	body, err := s.encode(ctx, sess)
	if err != nil {
		return nil, err
	}
	extra := item{
		attrVersion: num(sess.Version),
		attrGSIPK:   str("SESSIONS#" + strconv.Itoa(shard(sess.ID))),
		attrGSISK:   str(sess.ID),
	}
	if sess.Owner != "" {
		extra[attrOwner] = str(sess.Owner) // beside the body, which may be a claim check
	}
	return with(key(sessionPK(sess.ID), skSession), body, extra), nil
}

// attrOwner is a session's Owner (S), what ListSessions filters on.
const attrOwner = "owner"

// CreateSession stores sess with Version 1, or returns ErrExists (not when
// the SDK's retry of this call finds the session its first attempt stored).
func (s *Store) CreateSession(ctx context.Context, sess contracts.Session) (contracts.Session, error) {
	if sess.ID == "" {
		return contracts.Session{}, fmt.Errorf("creating session: empty id: %w", contracts.ErrInvalid)
	}
	sess.Version = 1
	it, err := s.sessionItem(ctx, sess)
	if err != nil {
		return contracts.Session{}, fmt.Errorf("creating session %s: %w", sess.ID, err)
	}
	if err := s.putNew(ctx, it); err != nil {
		return contracts.Session{}, fmt.Errorf("creating session %s: %w", sess.ID, err)
	}
	return sess, nil
}

// GetSession returns the session (consistent read) or ErrNotFound.
func (s *Store) GetSession(ctx context.Context, id string) (contracts.Session, error) {
	it, err := s.getItem(ctx, sessionPK(id), skSession)
	if err != nil {
		return contracts.Session{}, fmt.Errorf("getting session %s: %w", id, err)
	}
	if it == nil {
		return contracts.Session{}, fmt.Errorf("getting session %s: %w", id, contracts.ErrNotFound)
	}
	var sess contracts.Session
	if err := s.decode(ctx, it, &sess); err != nil {
		return contracts.Session{}, fmt.Errorf("getting session %s: %w", id, err)
	}
	return sess, nil
}

// UpdateSession writes sess with Version expected+1 if the stored version is
// expected; otherwise ErrConflict (ErrNotFound if absent).
func (s *Store) UpdateSession(ctx context.Context, sess contracts.Session, expected int64) (contracts.Session, error) {
	sess.Version = expected + 1
	it, err := s.sessionItem(ctx, sess)
	if err != nil {
		return contracts.Session{}, fmt.Errorf("updating session %s: %w", sess.ID, err)
	}
	if err := s.putVersioned(ctx, it, expected); err != nil {
		return contracts.Session{}, fmt.Errorf("updating session %s at version %d: %w", sess.ID, expected, err)
	}
	return sess, nil
}

// putVersioned replaces the item at it's key if its version is expected.
// The ALL_OLD item of a failed condition tells ErrNotFound from ErrConflict
// without a second read, and a retry whose first attempt was applied (the
// stored item is it, by its write id: mine.go) from a conflict.
func (s *Store) putVersioned(ctx context.Context, it item, expected int64) error {
	it = stamped(it)
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: s.table, Item: it,
		ConditionExpression:                 new("#v = :expected"),
		ExpressionAttributeNames:            map[string]string{"#v": attrVersion},
		ExpressionAttributeValues:           item{":expected": num(expected)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if old, ok := conditionFailed(err); ok {
		if mine(old, it) {
			return nil // our own write, its answer lost: the SDK retried it
		}
		return missOrConflict(old)
	}
	return err
}

// ListSessions returns up to limit sessions (≤ 0: all), newest id first,
// merged from the GSI shards (eventually consistent); only owner's when
// owner is not "" (a filter on the owner attribute: each shard's Query
// pages on until it has limit matches or reaches its end, since
// DynamoDB's Limit counts the items read before the filter).
func (s *Store) ListSessions(ctx context.Context, owner string, limit int) ([]contracts.Session, error) {
	its, err := s.queryIndex(ctx, "SESSIONS#", owner, limit, false)
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	out := make([]contracts.Session, len(its))
	for i, it := range its {
		if err := s.decode(ctx, it, &out[i]); err != nil {
			return nil, fmt.Errorf("listing sessions: %w", err)
		}
	}
	return out, nil
}

// queryShards queries the GSI partitions prefix0 … prefix7 concurrently, up
// to limit items each, and merges them by gsi1sk (ascending when forward)
// keeping at most limit (≤ 0: all).
func (s *Store) queryShards(ctx context.Context, prefix string, limit int, forward bool) ([]item, error) {
	return s.queryIndex(ctx, prefix, "", limit, forward)
}

// queryUnfinished returns at most limit (≤ 0: all) records of the repair
// index's partitions prefix0 … prefix7, oldest attrUpdated first (ties by
// id, the sort key). An unfinished record's index key is its id, which no
// write moves: a write that changed it would cost a delete and a put in
// the index instead of one rewrite. The order by update time comes from
// attrUpdated, so the sweep reads every entry's keys and attrUpdated
// (a projection: memory stays small however long the backlog; read units
// are the entries' whole size, eventually consistent, 4 KB a half unit),
// then the chosen records by key, consistently (BatchGetItem), in that
// order. An entry written before the key was the id (gsi1sk
// updated_at#id, no attrUpdated) sorts first, until its record's next
// write. A record gone since its entry was read is left out; one finished
// since is returned as it now is (the caller drops it).
func (s *Store) queryUnfinished(ctx context.Context, prefix string, limit int) ([]item, error) {
	entries, err := s.queryPartitions(ctx, prefix, 0, true, func(in *dynamodb.QueryInput) {
		in.ProjectionExpression = new("#pk, #sk, #g, #u")
		in.ExpressionAttributeNames = map[string]string{"#pk": attrPK, "#sk": attrSK, "#g": attrGSISK, "#u": attrUpdated}
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(entries, func(a, b item) int {
		return cmp.Or(cmp.Compare(getS(a, attrUpdated), getS(b, attrUpdated)), cmp.Compare(getS(a, attrGSISK), getS(b, attrGSISK)))
	})
	if limit > 0 && len(entries) > limit {
		entries = entries[:limit]
	}
	keys := make([]item, len(entries))
	for i, e := range entries {
		keys[i] = key(getS(e, attrPK), getS(e, attrSK))
	}
	got, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("reading %d unfinished records: %w", len(keys), err)
	}
	byKey := make(map[[2]string]item, len(got))
	for _, it := range got {
		byKey[[2]string{getS(it, attrPK), getS(it, attrSK)}] = it
	}
	out := make([]item, 0, len(entries))
	for _, e := range entries {
		if it, ok := byKey[[2]string{getS(e, attrPK), getS(e, attrSK)}]; ok {
			out = append(out, it)
		}
	}
	return out, nil
}

// queryIndex is queryShards keeping only the items whose owner attribute
// is owner, when owner is not "".
func (s *Store) queryIndex(ctx context.Context, prefix, owner string, limit int, forward bool) ([]item, error) {
	return s.queryPartitions(ctx, prefix, limit, forward, func(in *dynamodb.QueryInput) {
		if owner != "" {
			in.FilterExpression = new("#o = :o")
			in.ExpressionAttributeNames = map[string]string{"#o": attrOwner}
			in.ExpressionAttributeValues[":o"] = str(owner)
		}
	})
}

// queryPartitions is queryShards with each partition's Query shaped by
// shape (a filter, a projection).
func (s *Store) queryPartitions(ctx context.Context, prefix string, limit int, forward bool, shape func(*dynamodb.QueryInput)) ([]item, error) {
	var (
		wg   sync.WaitGroup
		per  = make([][]item, shards)
		errs = make([]error, shards)
	)
	for i := range shards {
		wg.Go(func() {
			in := &dynamodb.QueryInput{
				IndexName:                 new(GSI),
				KeyConditionExpression:    new("gsi1pk = :p"),
				ExpressionAttributeValues: item{":p": str(prefix + strconv.Itoa(i))},
				ScanIndexForward:          new(forward),
			}
			shape(in)
			errs[i] = s.query(ctx, in, limit, func(it item) (bool, error) {
				per[i] = append(per[i], it)
				return true, nil
			})
		})
	}
	wg.Wait()
	var all []item
	for i := range shards {
		if errs[i] != nil {
			return nil, fmt.Errorf("querying index partition %s%d: %w", prefix, i, errs[i])
		}
		all = append(all, per[i]...)
	}
	slices.SortFunc(all, func(a, b item) int {
		c := cmp.Compare(getS(a, attrGSISK), getS(b, attrGSISK))
		if !forward {
			c = -c
		}
		return c
	})
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	return all, nil
}
