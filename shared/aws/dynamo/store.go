package dynamo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Defaults and limits of Options.
const (
	// DefaultClaimCheckBytes is the body size above which a record goes to
	// the BlobStore (DynamoDB's item limit is 400 KB).
	DefaultClaimCheckBytes = 100 << 10
	// MaxClaimCheckBytes leaves room for keys and index attributes under
	// the 400 KB item limit.
	MaxClaimCheckBytes = 350_000
	// DefaultTTL is how long stream chunks and events live.
	DefaultTTL = 7 * 24 * time.Hour
)

// Options configures a Store.
type Options struct {
	// Table is the table name (required; create it with CreateTable).
	Table string
	// Blobs holds claim checks: record bodies above ClaimCheckBytes. Without
	// it such a write fails with contracts.ErrTooLarge.
	Blobs contracts.BlobStore
	// ClaimCheckBytes: bodies larger than this go to Blobs. Default
	// DefaultClaimCheckBytes; at most MaxClaimCheckBytes.
	ClaimCheckBytes int
	// TTL: stream chunks, completion markers and events expire this long
	// after they were written (attribute ttl). Default DefaultTTL.
	TTL time.Duration
	// Clock stamps the ttl attribute. Default: real time.
	Clock contracts.Clock
}

// Store implements the journal, transcript, stream and event ports on one
// DynamoDB table. It is safe for concurrent use by many goroutines and
// processes.
type Store struct {
	db    *dynamodb.Client
	opts  Options
	table *string
	// pageSize, when > 0, caps every Query page (tests use it to prove
	// LastEvaluatedKey loops); 0 lets DynamoDB fill 1 MB pages.
	pageSize int32

	mu       sync.Mutex
	sessions map[string]string // submission id → session id (immutable)
	// appendMu serialises this Store's appends per submission (striped by
	// shard), so its events become visible in seq order.
	appendMu [shards]sync.Mutex
	// shared remembers the shared strings stored or read (shared.go).
	shared sharedCache
	// seqs: the event seqs this Store reserved and has not used, per
	// submission (events.go; guarded by mu).
	seqs map[string]seqRange
	// deltas: the text_delta keys this Store appended, per submission
	// (events.go; guarded by mu).
	deltas map[string]map[string]bool
}

var (
	_ contracts.JournalStore    = (*Store)(nil)
	_ contracts.TranscriptStore = (*Store)(nil)
	_ contracts.StreamStore     = (*Store)(nil)
	_ contracts.EventLog        = (*Store)(nil)
)

// New returns a Store on the table opts.Table, which must exist (see
// CreateTable and EnableTTL).
func New(client *dynamodb.Client, opts Options) (*Store, error) {
	switch {
	case client == nil:
		return nil, fmt.Errorf("creating dynamo store: nil client: %w", contracts.ErrInvalid)
	case opts.Table == "":
		return nil, fmt.Errorf("creating dynamo store: empty table name: %w", contracts.ErrInvalid)
	case opts.ClaimCheckBytes > MaxClaimCheckBytes:
		return nil, fmt.Errorf("creating dynamo store: claim check threshold %d above %d: %w",
			opts.ClaimCheckBytes, MaxClaimCheckBytes, contracts.ErrInvalid)
	}
	if opts.ClaimCheckBytes <= 0 {
		opts.ClaimCheckBytes = DefaultClaimCheckBytes
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.Clock == nil {
		opts.Clock = contracts.WallClock{}
	}
	return &Store{db: client, opts: opts, table: &opts.Table, sessions: map[string]string{}}, nil
}

// Attribute names and key prefixes. doc.go lists every item type.
const (
	attrPK      = "pk"
	attrSK      = "sk"
	attrBody    = "body"    // the record as JSON (S)
	attrBlob    = "blob"    // claim check: BlobStore key of the JSON (S)
	attrVersion = "version" // sessions and submissions (N)
	attrGSIPK   = "gsi1pk"
	attrGSISK   = "gsi1sk"
	attrLSK     = "lsk"
	// attrUpdated is an unfinished record's update time (sortTime) beside
	// its index keys: ListUnfinished's order (queryUnfinished).
	attrUpdated = "updated"
	attrTTL     = TTLAttribute

	// shards spreads the GSI partitions (SESSIONS#n, UNFINISHED#n,
	// RUNS_UNFINISHED#n, SCHEDULES#n). Changing it re-keys the index:
	// existing items must be rewritten.
	shards = 8
)

type item = map[string]types.AttributeValue

func str(v string) *types.AttributeValueMemberS { return &types.AttributeValueMemberS{Value: v} }

func num(v int64) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func key(pk, sk string) item { return item{attrPK: str(pk), attrSK: str(sk)} }

// getS and getN read a string / number attribute ("" / 0 when absent).
func getS(it item, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getN(it item, name string) int64 {
	if v, ok := it[name].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

// shard maps an id to one of the GSI partitions.
func shard(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % shards)
}

// sortTime renders t in UTC, fixed width, so lexical order is time order.
func sortTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z") }

func (s *Store) ttl() *types.AttributeValueMemberN {
	return num(s.opts.Clock.Now().Add(s.opts.TTL).Unix())
}

// encode marshals v into a body attribute, or — above the claim check
// threshold — stores the JSON in the BlobStore under its sha256 and keeps
// the reference in a blob attribute. The returned map has exactly one of
// the two.
//
// A record up to the threshold has its string literals above
// SharedStringBytes stored once by content hash first (shared.go): the map
// then also has the cas attribute.
func (s *Store) encode(ctx context.Context, v any) (item, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding record: %w", err)
	}
	if len(b) > s.opts.ClaimCheckBytes {
		return s.encodeBytes(ctx, b) // the claim check rule: a large record goes whole
	}
	b, refs, err := s.share(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("encoding record: %w", err)
	}
	it, err := s.encodeBytes(ctx, b)
	if err != nil {
		return nil, err
	}
	if len(refs) > 0 {
		it[attrCAS] = &types.AttributeValueMemberSS{Value: refs}
	}
	return it, nil
}

// encodeWhole is encode without shared strings: the record whole in the
// body or one claim check (the workflow items, whose adapters move the
// body attribute alone).
func (s *Store) encodeWhole(ctx context.Context, v any) (item, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding record: %w", err)
	}
	return s.encodeBytes(ctx, b)
}

func (s *Store) encodeBytes(ctx context.Context, b []byte) (item, error) {
	if len(b) <= s.opts.ClaimCheckBytes {
		return item{attrBody: str(string(b))}, nil
	}
	if s.opts.Blobs == nil {
		return nil, fmt.Errorf("record of %d bytes above %d and no blob store: %w",
			len(b), s.opts.ClaimCheckBytes, contracts.ErrTooLarge)
	}
	sum := sha256.Sum256(b)
	ref := "sha256-" + hex.EncodeToString(sum[:])
	if err := s.opts.Blobs.PutBlob(ctx, ref, b); err != nil {
		return nil, fmt.Errorf("storing claim check %s: %w", ref, err)
	}
	return item{attrBlob: str(ref)}, nil
}

// decode unmarshals the record of it into v, fetching a claim check.
func (s *Store) decode(ctx context.Context, it item, v any) error {
	body, err := bodyText(it)
	if err != nil {
		return err
	}
	if ref := getS(it, attrBlob); ref != "" {
		if s.opts.Blobs == nil {
			return fmt.Errorf("reading claim check %s: no blob store: %w", ref, contracts.ErrInvalid)
		}
		b, err := s.opts.Blobs.GetBlob(ctx, ref)
		if err != nil {
			return fmt.Errorf("reading claim check %s: %w", ref, err)
		}
		body = string(b)
	}
	body, err = s.unshare(ctx, it, body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		return fmt.Errorf("decoding stored record: %w", err)
	}
	return nil
}

// with copies base and adds the attributes of the extra maps.
func with(base item, extra ...item) item {
	out := make(item, len(base)+4)
	for _, m := range append([]item{base}, extra...) {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// conditionFailed reports a ConditionalCheckFailedException and the stored
// item it returned (nil when the item is absent).
func conditionFailed(err error) (item, bool) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ccf.Item, true
	}
	return nil, false
}

// missOrConflict explains a failed `version = :expected` write from the
// ALL_OLD item: absent → ErrNotFound, present → ErrConflict.
func missOrConflict(old item) error {
	if len(old) == 0 {
		return contracts.ErrNotFound
	}
	return contracts.ErrConflict
}

// getItem reads one item with a consistent read; nil when absent.
func (s *Store) getItem(ctx context.Context, pk, sk string) (item, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: s.table, Key: key(pk, sk), ConsistentRead: new(true),
	})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

// filteredPage is the least a filtered Query reads per page: most of what
// it reads may not match, and a page of limit-minus-found items would take
// a round trip for every few matches.
const filteredPage = 100

// query runs in and feeds each item to each, following LastEvaluatedKey,
// until the items run out, limit (> 0) items were fed, or each says stop.
// With a FilterExpression, only matching items are fed and counted.
func (s *Store) query(ctx context.Context, in *dynamodb.QueryInput, limit int, each func(item) (bool, error)) error {
	in.TableName = s.table
	fed := 0
	for {
		in.Limit = nil
		var n int32
		if limit > 0 {
			n = int32(min(limit-fed, 1<<30))
			if in.FilterExpression != nil {
				n = max(n, filteredPage) // Limit counts the items read before the filter: read ahead
			}
		}
		if s.pageSize > 0 && (n == 0 || s.pageSize < n) {
			n = s.pageSize
		}
		if n > 0 {
			in.Limit = &n
		}
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return err
		}
		for _, it := range out.Items {
			more, err := each(it)
			if err != nil {
				return err
			}
			fed++
			if !more || limit > 0 && fed >= limit {
				return nil
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// rememberSession caches a submission's (immutable) session id.
func (s *Store) rememberSession(subID, sessionID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sessions) >= 10_000 {
		clear(s.sessions)
	}
	s.sessions[subID] = sessionID
}

func (s *Store) cachedSession(subID string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.sessions[subID]
	return id, ok
}
