package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairnrun/cairn/shared/contracts"
)

// CreateSubmission is idempotent ordering, not a transaction:
//
//  1. the claim: IDEM#<key> (with a key) or else the pointer SUB#<id>, put
//     attribute_not_exists and carrying the creation record's body;
//  2. the pointer (when the claim was the key item), attribute_not_exists;
//  3. the record, attribute_not_exists.
//
// Whoever finds a claim taken reads the record it names; if a crash (or a
// creator still in flight) left the claim without its record, the loser
// completes steps 2–3 from the body in the claim, so a creation is never
// half-visible for long and every duplicate returns the one winner.
// Each step is one conditional PutItem, so the loser learns the winner from
// the ALL_OLD item without a second read.
//
// (A transaction would cost double, and moto — the CI backend — neither
// isolates concurrent transactions nor survives them: it deep-copies the
// whole table per transaction.)
//
// The three items carry one write id (mine.go), and a completer copies the
// claim's write id into the pointer and record it writes, so the creator
// recognises its own creation whoever finished it: the SDK's retry of a
// step whose answer was lost, or a duplicate that completed the pointer
// between the creator's claim and its pointer write, is not "taken by
// another" (which left no caller with created=true: the RacingCreates
// flake, 0 created out of 16).

// CreateSubmission stores sub with Version 1. If the (session, idempotency
// key) or the id is taken, it returns the existing submission and
// created=false.
func (s *Store) CreateSubmission(ctx context.Context, sub contracts.Submission) (contracts.Submission, bool, error) {
	if sub.ID == "" || sub.SessionID == "" {
		return contracts.Submission{}, false, fmt.Errorf("creating submission: empty id or session id: %w", contracts.ErrInvalid)
	}
	sub.Version = 1
	rec, err := s.submissionItem(ctx, sub)
	if err != nil {
		return contracts.Submission{}, false, fmt.Errorf("creating submission %s: %w", sub.ID, err)
	}
	wid := item{attrWriteID: str(newWriteID())}
	rec = with(rec, wid)
	ptr := with(key(submissionPK(sub.ID), skPointer), item{attrSession: str(sub.SessionID), attrSubmitted: str(sub.ID)}, wid)
	if sub.IdempotencyKey != "" {
		idem := with(key(sessionPK(sub.SessionID), "IDEM#"+sub.IdempotencyKey), bodyOf(rec),
			item{attrSession: str(sub.SessionID), attrSubmitted: str(sub.ID)}, wid)
		if old, err := s.claim(ctx, idem); err != nil || old != nil {
			return s.existing(ctx, sub, old, err)
		}
	} else {
		ptr = with(ptr, bodyOf(rec))
	}
	// With a key, the pointer may already be ours: written by a duplicate
	// that found our claim without its record and completed it (with our
	// write id), which claim counts as ours.
	if old, err := s.claim(ctx, ptr); err != nil || old != nil {
		return s.existing(ctx, sub, old, err)
	}
	if err := s.putIfAbsent(ctx, rec); err != nil { // exists: a duplicate completed it for us
		return contracts.Submission{}, false, fmt.Errorf("creating submission %s: %w", sub.ID, err)
	}
	s.rememberSession(sub.ID, sub.SessionID)
	return sub, true, nil
}

// claim puts it (stamped with a write id unless it has one) if no item has
// its key, and returns nil; otherwise it returns the item that holds the
// key. The item holding the key is ours, and claim returns nil, when it
// carries our write id (mine): the SDK retried a put whose first attempt
// was applied and its answer lost, or a completer finished our creation.
func (s *Store) claim(ctx context.Context, it item) (item, error) {
	it = stamped(it)
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: s.table, Item: it,
		ConditionExpression:                 new("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	old, failed := conditionFailed(err)
	switch {
	case !failed:
		return nil, err
	case len(old) == 0: // a backend that omits ALL_OLD: read it
		old, err = s.getItem(ctx, getS(it, attrPK), getS(it, attrSK))
		if err == nil && old == nil {
			err = fmt.Errorf("claim %s vanished: %w", getS(it, attrSK), contracts.ErrConflict)
		}
		if err != nil {
			return nil, err
		}
	}
	if mine(old, it) {
		return nil, nil
	}
	return old, nil
}

// existing returns the submission a taken claim names, completing its
// creation from the claim's body if its record is missing.
func (s *Store) existing(ctx context.Context, sub contracts.Submission, claim item, err error) (contracts.Submission, bool, error) {
	if err != nil {
		return contracts.Submission{}, false, fmt.Errorf("creating submission %s: %w", sub.ID, err)
	}
	sessionID, id := getS(claim, attrSession), getS(claim, attrSubmitted)
	got, err := s.getSubmission(ctx, sessionID, id)
	if errors.Is(err, contracts.ErrNotFound) && len(bodyOf(claim)) > 0 {
		err = s.complete(ctx, claim)
		if err == nil {
			got, err = s.getSubmission(ctx, sessionID, id)
		}
	}
	if err != nil {
		return contracts.Submission{}, false, fmt.Errorf("creating submission %s: reading existing %s: %w", sub.ID, id, err)
	}
	s.rememberSession(id, sessionID)
	return got, false, nil
}

// complete writes the pointer and record of the creation recorded in claim,
// each unless present, on the creator's behalf: with the claim's write id,
// so that the creator, still in flight, finds them its own.
func (s *Store) complete(ctx context.Context, claim item) error {
	var first contracts.Submission
	if err := s.decode(ctx, claim, &first); err != nil {
		return err
	}
	wid := item{}
	if id := getS(claim, attrWriteID); id != "" {
		wid[attrWriteID] = str(id)
	}
	ptr := with(key(submissionPK(first.ID), skPointer), item{attrSession: str(first.SessionID), attrSubmitted: str(first.ID)}, wid)
	if err := s.putIfAbsent(ctx, ptr); err != nil {
		return err
	}
	rec, err := s.submissionItem(ctx, first)
	if err != nil {
		return err
	}
	return s.putIfAbsent(ctx, with(rec, wid))
}

// bodyOf returns the body or claim-check attribute of it.
func bodyOf(it item) item {
	out := item{}
	for _, name := range []string{attrBody, attrBodyZ, attrBlob, attrCAS} {
		if v, ok := it[name]; ok {
			out[name] = v
		}
	}
	return out
}
