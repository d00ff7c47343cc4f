package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairnrun/cairn/shared/contracts"
)

// A stream is the partition STREAM#<key>: CHUNK#<seq> items and the DONE
// completion marker, each create-if-absent and expiring (attribute ttl).

const (
	skDone      = "DONE"
	chunkPrefix = "CHUNK#"
)

func streamPK(key string) string { return "STREAM#" + key }

// PutChunks stores evs as chunks first, first+1, …: one conditional
// PutItem (create-if-absent) of the item CHUNK#<first>, which holds the
// one chunk, or — a flush of several — all of them (attribute n, the body
// a JSON array). A seq some item already holds keeps its first chunk:
// GetStream takes each seq from the item starting lowest.
func (s *Store) PutChunks(ctx context.Context, streamKey string, first int, evs ...contracts.ModelEvent) error {
	if streamKey == "" {
		return fmt.Errorf("putting stream chunk %d: empty key: %w", first, contracts.ErrInvalid)
	}
	if len(evs) == 0 {
		return nil
	}
	var v any = evs[0]
	extra := item{attrTTL: s.ttl()}
	if len(evs) > 1 {
		v, extra[attrChunks] = evs, num(int64(len(evs)))
	}
	body, err := s.encode(ctx, v)
	if err != nil {
		return fmt.Errorf("putting stream chunks %s/%d..%d: %w", streamKey, first, first+len(evs)-1, err)
	}
	it := with(key(streamPK(streamKey), fmt.Sprintf("%s%010d", chunkPrefix, first)), body, extra)
	if err := s.putIfAbsent(ctx, it); err != nil {
		return fmt.Errorf("putting stream chunks %s/%d..%d: %w", streamKey, first, first+len(evs)-1, err)
	}
	return nil
}

// attrChunks is the number of chunks of a batched chunk item (N).
const attrChunks = "n"

// Complete stores the stream's completion marker unless one exists (the
// first completion wins).
func (s *Store) Complete(ctx context.Context, streamKey string, resp contracts.ModelResponse) (contracts.ModelResponse, error) {
	if streamKey == "" {
		return resp, fmt.Errorf("completing stream: empty key: %w", contracts.ErrInvalid)
	}
	body, err := s.encode(ctx, resp)
	if err != nil {
		return resp, fmt.Errorf("completing stream %s: %w", streamKey, err)
	}
	k := key(streamPK(streamKey), skDone)
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: s.table, Item: with(k, body, item{attrTTL: s.ttl()}), ConditionExpression: new("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld, // the winner, without a read
	})
	old, lost := conditionFailed(err)
	if !lost {
		if err != nil {
			return resp, fmt.Errorf("completing stream %s: %w", streamKey, err)
		}
		return resp, nil
	}
	if len(old) == 0 { // an endpoint that returns no item on a failed condition: read it
		out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: s.table, Key: k, ConsistentRead: new(true)})
		if err != nil {
			return resp, fmt.Errorf("reading the completion of stream %s: %w", streamKey, err)
		}
		if len(out.Item) == 0 { // the condition failed on an item that is gone: it expired (TTL)
			return resp, fmt.Errorf("reading the completion of stream %s: gone: %w", streamKey, contracts.ErrNotFound)
		}
		old = out.Item
	}
	var won contracts.ModelResponse
	if err := s.decode(ctx, old, &won); err != nil {
		return resp, fmt.Errorf("decoding the completion of stream %s: %w", streamKey, err)
	}
	return won, nil
}

// GetStream returns the stream's chunks in seq order and its completion
// marker from one consistent Query of the partition (paginated); an unknown
// key is an empty Stream.
func (s *Store) GetStream(ctx context.Context, streamKey string) (contracts.Stream, error) {
	var (
		st    contracts.Stream
		bySeq = map[int]contracts.ModelEvent{}
		seqs  []int
	)
	err := s.query(ctx, &dynamodb.QueryInput{
		ConsistentRead:            new(true),
		KeyConditionExpression:    new("pk = :pk"),
		ExpressionAttributeValues: item{":pk": str(streamPK(streamKey))},
	}, 0, func(it item) (bool, error) {
		switch sk := getS(it, attrSK); {
		case sk == skDone:
			st.Done = new(contracts.ModelResponse)
			if err := s.decode(ctx, it, st.Done); err != nil {
				return false, fmt.Errorf("decoding completion: %w", err)
			}
		case strings.HasPrefix(sk, chunkPrefix):
			first, err := strconv.Atoi(sk[len(chunkPrefix):])
			if err != nil {
				return false, fmt.Errorf("chunk item %s: %w", sk, contracts.ErrInvalid)
			}
			evs := []contracts.ModelEvent{{}}
			if getN(it, attrChunks) > 0 {
				evs = nil
				err = s.decode(ctx, it, &evs)
			} else {
				err = s.decode(ctx, it, &evs[0])
			}
			if err != nil {
				return false, fmt.Errorf("decoding chunk %s: %w", sk, err)
			}
			for i, ev := range evs {
				if _, ok := bySeq[first+i]; !ok { // items come lowest first: the first chunk of a seq wins
					bySeq[first+i] = ev
					seqs = append(seqs, first+i)
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return contracts.Stream{}, fmt.Errorf("reading stream %s: %w", streamKey, err)
	}
	slices.Sort(seqs)
	for _, q := range seqs {
		st.Chunks = append(st.Chunks, bySeq[q])
	}
	return st, nil
}

// putAllIfAbsent writes every item unless an item with its key exists,
// each with its own conditional PutItem, up to putParallel at a time: one
// round trip of latency for a batch, one write unit per small item (a
// transaction would cost two, and its all-or-nothing is not wanted here).
func (s *Store) putAllIfAbsent(ctx context.Context, its []item) error {
	sem := make(chan struct{}, putParallel)
	errs := make([]error, len(its))
	var wg sync.WaitGroup
	for i, it := range its {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = s.putIfAbsent(ctx, it)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// putParallel bounds the concurrent PutItems of one putAllIfAbsent.
const putParallel = 16

// putIfAbsent writes it unless an item with its key exists.
func (s *Store) putIfAbsent(ctx context.Context, it item) error {
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: s.table, Item: it, ConditionExpression: new("attribute_not_exists(pk)"),
	})
	if _, ok := conditionFailed(err); ok {
		return nil
	}
	return err
}
