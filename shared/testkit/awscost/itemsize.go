package awscost

// What one item costs: its size as DynamoDB counts it, the keys and index
// entries it makes, and the units of reading or writing it.

import (
	"math"
	"reflect"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func keys(ks []types.KeySchemaElement) (hash, rng string) {
	for _, k := range ks {
		if k.KeyType == types.KeyTypeHash {
			hash = *k.AttributeName
		} else {
			rng = *k.AttributeName
		}
	}
	return hash, rng
}

type item = map[string]types.AttributeValue

// kindOf names an item's kind by its key prefixes ("SUB#/EVT#").
func (t *tableDef) kindOf(key item) string {
	p := func(name string) string {
		s, _ := key[name].(*types.AttributeValueMemberS)
		if s == nil {
			return ""
		}
		if i := strings.IndexByte(s.Value, '#'); i >= 0 {
			return s.Value[:i+1]
		}
		return s.Value
	}
	return p(t.hash) + "/" + p(t.rng)
}

func (t *tableDef) keyOf(it item) item {
	k := item{t.hash: it[t.hash]}
	if t.rng != "" {
		k[t.rng] = it[t.rng]
	}
	return k
}

// entry is the index entry of it in ix (nil when it is not in the index:
// a sparse index skips items without its key attributes).
func (t *tableDef) entry(ix indexDef, it item) item {
	if it == nil || it[ix.hash] == nil || ix.rng != "" && it[ix.rng] == nil {
		return nil
	}
	if ix.projection == types.ProjectionTypeAll || ix.projection == "" {
		return it
	}
	e := t.keyOf(it)
	e[ix.hash] = it[ix.hash]
	if ix.rng != "" {
		e[ix.rng] = it[ix.rng]
	}
	for _, a := range ix.include {
		if v, ok := it[a]; ok {
			e[a] = v
		}
	}
	return e
}

// write prices one write that took the item from old to new (nil: absent)
// when ok, or failed its condition (the table's units only).
func (t *tableDef) write(old, new item, ok bool) Units {
	u := Units{Calls: 1}
	size := max(Size(old), Size(new))
	u.Bytes = int64(size)
	u.TableWU = kb(size)
	if !ok {
		u.CondFailed = 1
		return u
	}
	for _, ix := range t.indexes {
		o, n := t.entry(ix, old), t.entry(ix, new)
		var w float64
		switch {
		case o == nil && n == nil:
		case o == nil:
			w = kb(Size(n))
		case n == nil:
			w = kb(Size(o))
		case !reflect.DeepEqual(o[ix.hash], n[ix.hash]) || ix.rng != "" && !reflect.DeepEqual(o[ix.rng], n[ix.rng]):
			w = kb(Size(o)) + kb(Size(n)) // the key moved: a delete and a put
		case !reflect.DeepEqual(o, n):
			w = kb(max(Size(o), Size(n)))
		}
		if ix.global {
			u.GSIWU += w
		} else {
			u.LSIWU += w
		}
	}
	return u
}

// kb is the write units of an item of size bytes (1 KB each, at least 1).
func kb(size int) float64 { return math.Max(1, math.Ceil(float64(size)/1024)) }

// readUnits is the read units of reading size bytes in one request.
func readUnits(size int, consistent bool) float64 {
	u := math.Max(1, math.Ceil(float64(size)/4096))
	if !consistent {
		u /= 2
	}
	return u
}

// Size is DynamoDB's size of an item: each attribute's name and value
// (strings and binaries by length, numbers about one byte per two digits
// plus one, booleans and nulls one byte, lists and maps three bytes plus
// one per element plus their elements).
func Size(it item) int {
	n := 0
	for k, v := range it {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

func numSize(s string) int {
	digits := 0
	for _, c := range strings.TrimLeft(strings.TrimPrefix(s, "-"), "0") {
		if c >= '0' && c <= '9' {
			digits++
		}
	}
	return (digits+1)/2 + 1
}
