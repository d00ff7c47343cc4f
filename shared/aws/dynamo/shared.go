package dynamo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Shared strings: one copy of each large byte. A turn's final answer is in
// the stream's completion marker, the assistant node, the submission
// record (written again at COMMITTED, each write with its index copies)
// and the committed event; a tool's output in its tool record, the tool
// node and its tool_finished event. So when a record is encoded, every
// JSON string literal of more than SharedStringBytes is stored once, by
// content hash, and the record keeps a placeholder — DynamoDB bills every
// KB of every copy (and of every index copy), so the copies cost more than
// their bytes.
//
//   - the literal (its exact JSON bytes, quotes included) is stored under
//     ref = sha256-<hex of the literal> before the item that refers to it
//     (create-if-absent, like a claim check): up to sharedInTableBytes in
//     the item CAS#<ref> / CAS (attribute v), larger in the BlobStore when
//     there is one (one S3 PUT is cheaper than 8 KB of write units);
//   - the record's body holds "\u0000ref:<ref>" in its place and the item
//     lists its refs in the string set attribute cas ("d:<ref>" in the
//     table, "s:<ref>" in the BlobStore); decode puts the literals back
//     byte for byte, so the decoded record is exactly the one encoded;
//   - a Store remembers the refs it stored or read (bounded), and checks
//     with a consistent GetItem (a read unit) before storing one it does
//     not know: a write that fails its condition is billed like one that
//     succeeds.
//
// Nothing is deleted: a shared string lives as long as the table (like
// claim checks). Stream chunks and events expire; their shared strings do
// not (a 7-day TTL on them would be a follow-up).

const (
	// SharedStringBytes: JSON string literals longer than this are stored
	// once by content hash.
	SharedStringBytes = 1024
	// sharedInTableBytes: shared literals up to this size go to a table
	// item, larger ones to the BlobStore (if any).
	sharedInTableBytes = 8 << 10
	attrCAS            = "cas"
	attrCASValue       = "v"
	skCAS              = "CAS"
	refPlaceholder     = `"\u0000ref:` // + ref + `"`
)

func casPK(ref string) string { return "CAS#" + ref }

type sharedCache struct {
	mu   sync.Mutex
	vals map[string][]byte // ref → literal (nil: known stored, not kept)
	size int
}

const sharedCacheBytes = 32 << 20

func (c *sharedCache) get(ref string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.vals[ref]
	return v, ok
}

func (c *sharedCache) put(ref string, lit []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.vals == nil || c.size+len(lit) > sharedCacheBytes {
		c.vals, c.size = map[string][]byte{}, 0
	}
	c.vals[ref] = lit
	c.size += len(lit)
}

// literals returns the [start, end) offsets of the string literals of the
// JSON b (compact or not) longer than n bytes.
func literals(b []byte, n int) [][2]int {
	var out [][2]int
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		j := i + 1
		for j < len(b) && b[j] != '"' {
			if b[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(b) {
			return out // not valid JSON: leave it be
		}
		if j+1-i > n {
			out = append(out, [2]int{i, j + 1})
		}
		i = j
	}
	return out
}

// share replaces b's long literals by placeholders, storing each, and
// returns the new body and the cas attribute values.
func (s *Store) share(ctx context.Context, b []byte) ([]byte, []string, error) {
	lits := literals(b, SharedStringBytes)
	if len(lits) == 0 {
		return b, nil, nil
	}
	var (
		out  bytes.Buffer
		refs []string
		last int
		seen = map[string]bool{}
	)
	for _, l := range lits {
		lit := b[l[0]:l[1]]
		sum := sha256.Sum256(lit)
		ref := "sha256-" + hex.EncodeToString(sum[:])
		where, err := s.storeShared(ctx, ref, lit)
		if err != nil {
			return nil, nil, err
		}
		out.Write(b[last:l[0]])
		out.WriteString(refPlaceholder + ref + `"`)
		last = l[1]
		if !seen[where+ref] {
			seen[where+ref] = true
			refs = append(refs, where+ref)
		}
	}
	out.Write(b[last:])
	return out.Bytes(), refs, nil
}

// storeShared stores lit under ref unless it is there, and says where
// ("d:" the table, "s:" the BlobStore).
func (s *Store) storeShared(ctx context.Context, ref string, lit []byte) (string, error) {
	where := "d:"
	if len(lit) > sharedInTableBytes && s.opts.Blobs != nil {
		where = "s:"
	}
	if _, ok := s.shared.get(where + ref); ok {
		return where, nil
	}
	if where == "s:" {
		if err := s.opts.Blobs.PutBlob(ctx, ref, lit); err != nil {
			return "", fmt.Errorf("storing shared string %s: %w", ref, err)
		}
		s.shared.put(where+ref, lit)
		return where, nil
	}
	if len(lit) > MaxClaimCheckBytes {
		return "", fmt.Errorf("string of %d bytes and no blob store: %w", len(lit), contracts.ErrTooLarge)
	}
	it, err := s.getItem(ctx, casPK(ref), skCAS)
	if err != nil {
		return "", fmt.Errorf("checking shared string %s: %w", ref, err)
	}
	if it == nil {
		if err := s.putIfAbsent(ctx, with(key(casPK(ref), skCAS), item{attrCASValue: str(string(lit))})); err != nil {
			return "", fmt.Errorf("storing shared string %s: %w", ref, err)
		}
	}
	s.shared.put(where+ref, lit)
	return where, nil
}

// unshare puts the literals of the item's cas refs back into body.
func (s *Store) unshare(ctx context.Context, it item, body string) (string, error) {
	ss, ok := it[attrCAS].(*types.AttributeValueMemberSS)
	if !ok || len(ss.Value) == 0 {
		return body, nil
	}
	pairs := make([]string, 0, 2*len(ss.Value))
	for _, v := range ss.Value {
		where, ref := v[:2], v[2:]
		lit, ok := s.shared.get(where + ref)
		if !ok || lit == nil {
			var err error
			if lit, err = s.loadShared(ctx, where, ref); err != nil {
				return "", err
			}
			s.shared.put(where+ref, lit)
		}
		pairs = append(pairs, refPlaceholder+ref+`"`, string(lit))
	}
	return strings.NewReplacer(pairs...).Replace(body), nil
}

func (s *Store) loadShared(ctx context.Context, where, ref string) ([]byte, error) {
	if where == "s:" {
		if s.opts.Blobs == nil {
			return nil, fmt.Errorf("reading shared string %s: no blob store: %w", ref, contracts.ErrInvalid)
		}
		b, err := s.opts.Blobs.GetBlob(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("reading shared string %s: %w", ref, err)
		}
		return b, nil
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: s.table, Key: key(casPK(ref), skCAS), ConsistentRead: new(true),
	})
	if err != nil {
		return nil, fmt.Errorf("reading shared string %s: %w", ref, err)
	}
	v := getS(out.Item, attrCASValue)
	if v == "" {
		return nil, fmt.Errorf("reading shared string %s: missing: %w", ref, contracts.ErrNotFound)
	}
	return []byte(v), nil
}
