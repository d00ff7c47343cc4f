package dynamo

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/cairnrun/cairn/shared/contracts"
)

// A submission is up to three items (see doc.go): the record in its
// session's partition (so ListSubmissions is a strongly consistent Query),
// a pointer SUB#<id> naming the session (so GetSubmission needs only the id,
// and an id is unique across sessions), and, with an idempotency key,
// IDEM#<key> in the session partition naming the submission. create.go
// writes them.

const (
	attrPhase = "phase"
	// indexedPhase is the one phase whose submissions are in the LSI.
	indexedPhase  = contracts.PhaseAccepted
	skPointer     = "SUB"
	attrSession   = "session"
	attrSubmitted = "sub"
)

func submissionPK(id string) string { return "SUB#" + id }
func recordSK(id string) string     { return "SUB#" + id }

// submissionItem is the full record item of sub (the caller sets Version).
// Only a non-terminal submission carries the GSI key attributes, so a
// terminal write drops it from the sparse repair index; only an ACCEPTED
// one carries the LSI key (the hot phase query: the session's next
// waiting turn), so the writes of a running turn touch no LSI entry and
// the advance out of ACCEPTED is the one delete there. ListSubmissions by
// any other phase filters the session's partition.
func (s *Store) submissionItem(ctx context.Context, sub contracts.Submission) (item, error) {
	body, err := s.encode(ctx, sub)
	if err != nil {
		return nil, err
	}
	it := with(key(sessionPK(sub.SessionID), recordSK(sub.ID)), compact(body), item{
		attrVersion: num(sub.Version),
		attrPhase:   str(string(sub.Phase)),
	})
	if sub.Phase == indexedPhase {
		it[attrLSK] = str(string(sub.Phase) + "#" + sub.ID)
	}
	if !sub.Phase.Terminal() {
		it[attrGSIPK] = str("UNFINISHED#" + strconv.Itoa(shard(sub.ID)))
		it[attrGSISK] = str(sub.ID)
		it[attrUpdated] = str(sortTime(sub.UpdatedAt))
	}
	return it, nil
}

// sessionOf resolves a submission id to its session through the pointer
// item (cached: it never changes).
func (s *Store) sessionOf(ctx context.Context, id string) (string, error) {
	if sess, ok := s.cachedSession(id); ok {
		return sess, nil
	}
	it, err := s.getItem(ctx, submissionPK(id), skPointer)
	if err != nil {
		return "", err
	}
	sess := getS(it, attrSession)
	if sess == "" {
		return "", contracts.ErrNotFound
	}
	s.rememberSession(id, sess)
	return sess, nil
}

// GetSubmission returns the submission (consistent read) or ErrNotFound.
func (s *Store) GetSubmission(ctx context.Context, id string) (contracts.Submission, error) {
	sess, err := s.sessionOf(ctx, id)
	if err != nil {
		return contracts.Submission{}, fmt.Errorf("getting submission %s: %w", id, err)
	}
	sub, err := s.getSubmission(ctx, sess, id)
	if err != nil {
		return contracts.Submission{}, fmt.Errorf("getting submission %s: %w", id, err)
	}
	return sub, nil
}

func (s *Store) getSubmission(ctx context.Context, sessionID, id string) (contracts.Submission, error) {
	it, err := s.getItem(ctx, sessionPK(sessionID), recordSK(id))
	if err != nil {
		return contracts.Submission{}, err
	}
	if it == nil {
		return contracts.Submission{}, contracts.ErrNotFound
	}
	var sub contracts.Submission
	if err := s.decode(ctx, it, &sub); err != nil {
		return contracts.Submission{}, err
	}
	return sub, nil
}

// UpdateSubmission writes sub with Version expected+1 if the stored version
// is expected; otherwise ErrConflict (ErrNotFound if absent). The record is
// addressed by (sub.SessionID, sub.ID): both are fixed at creation, and a
// record carrying another session id is ErrNotFound.
func (s *Store) UpdateSubmission(ctx context.Context, sub contracts.Submission, expected int64) (contracts.Submission, error) {
	if sub.ID == "" {
		return contracts.Submission{}, fmt.Errorf("updating submission: empty id: %w", contracts.ErrInvalid)
	}
	if sub.SessionID == "" {
		sess, err := s.sessionOf(ctx, sub.ID)
		if err != nil {
			return contracts.Submission{}, fmt.Errorf("updating submission %s: %w", sub.ID, err)
		}
		sub.SessionID = sess
	}
	sub.Version = expected + 1
	it, err := s.submissionItem(ctx, sub)
	if err != nil {
		return contracts.Submission{}, fmt.Errorf("updating submission %s: %w", sub.ID, err)
	}
	if err := s.putVersioned(ctx, it, expected); err != nil {
		return contracts.Submission{}, fmt.Errorf("updating submission %s at version %d: %w", sub.ID, expected, err)
	}
	return sub, nil
}

// ListSubmissions returns a session's submissions in id order with strongly
// consistent Queries: the session partition's SUB# items; for ACCEPTED the
// LSI range "ACCEPTED#"; for another phase the partition filtered on phase.
func (s *Store) ListSubmissions(ctx context.Context, sessionID string, phase contracts.Phase, limit int) ([]contracts.Submission, error) {
	in := &dynamodb.QueryInput{
		ConsistentRead:            new(true),
		KeyConditionExpression:    new("pk = :pk AND begins_with(sk, :prefix)"),
		ExpressionAttributeValues: item{":pk": str(sessionPK(sessionID)), ":prefix": str("SUB#")},
	}
	switch {
	case phase == indexedPhase:
		in.IndexName = new(LSI)
		in.KeyConditionExpression = new("pk = :pk AND begins_with(lsk, :prefix)")
		in.ExpressionAttributeValues[":prefix"] = str(string(phase) + "#")
	case phase != "":
		in.FilterExpression = new("#phase = :phase")
		in.ExpressionAttributeNames = map[string]string{"#phase": attrPhase}
		in.ExpressionAttributeValues[":phase"] = str(string(phase))
	}
	var out []contracts.Submission
	err := s.query(ctx, in, limit, func(it item) (bool, error) {
		var sub contracts.Submission
		if err := s.decode(ctx, it, &sub); err != nil {
			return false, err
		}
		out = append(out, sub)
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing submissions of session %s: %w", sessionID, err)
	}
	return out, nil
}

// ListUnfinished returns up to limit (≤ 0: all) non-terminal submissions,
// oldest UpdatedAt first: the sparse GSI's UNFINISHED#0..7 partitions'
// entries (eventually consistent: one created a moment ago may be
// missing), then the chosen records read by key (queryUnfinished), so one
// finished since its entry was read is left out.
func (s *Store) ListUnfinished(ctx context.Context, limit int) ([]contracts.Submission, error) {
	its, err := s.queryUnfinished(ctx, "UNFINISHED#", limit)
	if err != nil {
		return nil, fmt.Errorf("listing unfinished submissions: %w", err)
	}
	out := make([]contracts.Submission, 0, len(its))
	for _, it := range its {
		var sub contracts.Submission
		if err := s.decode(ctx, it, &sub); err != nil {
			return nil, fmt.Errorf("listing unfinished submissions: %w", err)
		}
		if !sub.Phase.Terminal() { // finished since its index entry was read
			out = append(out, sub)
		}
	}
	return out, nil
}
