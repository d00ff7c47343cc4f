package awscost

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDB bills on-demand requests in request units, not calls: a write
// is one write unit per KB of the item (rounded up; the larger of the item
// before and after), plus the same again for every index the write touches
// — an index entry added or removed is a put or delete there, an index key
// that changes is both, an entry whose projected attributes change is one
// rewrite; a read is one unit per 4 KB read (strongly consistent; half for
// eventually consistent), a Query summed over the items it reads. moto (and
// LocalStack) answer ReturnConsumedCapacity with a fixed figure, so the
// Meter computes the units from the items themselves: before each write it
// reads the item's current state through an uncounted client, after a
// successful UpdateItem the state it left, and it reads the table's key
// schema and indexes (their keys and projections) from DescribeTable.

// Units are the request units of a set of calls.
type Units struct {
	Calls      int64
	TableWU    float64 // write units in the base table
	GSIWU      float64 // write units in global secondary indexes
	LSIWU      float64 // write units in local secondary indexes
	RU         float64 // read units
	Bytes      int64   // bytes of the items written (the larger of before and after)
	CondFailed int64   // writes whose condition failed (they still cost the table's units)
}

// WU is every write unit: table and indexes.
func (u Units) WU() float64 { return u.TableWU + u.GSIWU + u.LSIWU }

func (u *Units) add(v Units) {
	u.Calls += v.Calls
	u.TableWU += v.TableWU
	u.GSIWU += v.GSIWU
	u.LSIWU += v.LSIWU
	u.RU += v.RU
	u.Bytes += v.Bytes
	u.CondFailed += v.CondFailed
}

// Meter counts DynamoDB request units by operation and by item kind (the
// pk prefix and sk prefix, e.g. "STREAM#/CHUNK#" for stream chunks).
// Instrument the counted clients' config with it (CallCounter.Meter does
// when set); DB is an uncounted client on the same endpoint.
type Meter struct {
	DB *dynamodb.Client

	mu     sync.Mutex
	tables map[string]*tableDef
	byOp   map[string]*Units
	byKind map[string]*Units
	errs   []error
}

type indexDef struct {
	name, hash, rng string
	global          bool
	projection      types.ProjectionType
	include         []string
}

type tableDef struct {
	hash, rng string
	indexes   []indexDef
}

// Reset zeroes the counts.
func (m *Meter) Reset() {
	m.mu.Lock()
	m.byOp, m.byKind, m.errs = nil, nil, nil
	m.mu.Unlock()
}

// ByOp returns the units by "DynamoDB.<Operation>".
func (m *Meter) ByOp() map[string]Units {
	return m.snapshot(func() map[string]*Units { return m.byOp })
}

// ByKind returns the units by item kind ("<pk prefix>/<sk prefix>").
func (m *Meter) ByKind() map[string]Units {
	return m.snapshot(func() map[string]*Units { return m.byKind })
}

// Err reports what the meter could not measure (a failed shadow read).
func (m *Meter) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return errors.Join(m.errs...)
}

// Total is every unit counted.
func (m *Meter) Total() Units {
	var t Units
	for _, u := range m.ByOp() {
		t.add(u)
	}
	return t
}

func (m *Meter) snapshot(get func() map[string]*Units) map[string]Units {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]Units{}
	for k, v := range get() {
		out[k] = *v
	}
	return out
}

func (m *Meter) record(op, kind string, u Units) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byOp == nil {
		m.byOp, m.byKind = map[string]*Units{}, map[string]*Units{}
	}
	for mp, k := range map[*map[string]*Units]string{&m.byOp: "DynamoDB." + op, &m.byKind: kind} {
		if (*mp)[k] == nil {
			(*mp)[k] = &Units{}
		}
		(*mp)[k].add(u)
	}
}

func (m *Meter) fail(err error) {
	m.mu.Lock()
	m.errs = append(m.errs, err)
	m.mu.Unlock()
}

// table returns the key schema and indexes of name (DescribeTable, cached).
func (m *Meter) table(ctx context.Context, name string) (*tableDef, error) {
	m.mu.Lock()
	t := m.tables[name]
	m.mu.Unlock()
	if t != nil {
		return t, nil
	}
	out, err := m.DB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &name})
	if err != nil {
		return nil, err
	}
	t = &tableDef{}
	t.hash, t.rng = keys(out.Table.KeySchema)
	for _, g := range out.Table.GlobalSecondaryIndexes {
		d := indexDef{name: *g.IndexName, global: true}
		d.hash, d.rng = keys(g.KeySchema)
		if g.Projection != nil {
			d.projection, d.include = g.Projection.ProjectionType, g.Projection.NonKeyAttributes
		}
		t.indexes = append(t.indexes, d)
	}
	for _, l := range out.Table.LocalSecondaryIndexes {
		d := indexDef{name: *l.IndexName}
		d.hash, d.rng = keys(l.KeySchema)
		if l.Projection != nil {
			d.projection, d.include = l.Projection.ProjectionType, l.Projection.NonKeyAttributes
		}
		t.indexes = append(t.indexes, d)
	}
	m.mu.Lock()
	if m.tables == nil {
		m.tables = map[string]*tableDef{}
	}
	m.tables[name] = t
	m.mu.Unlock()
	return t, nil
}

// measure runs one DynamoDB call (next) and records its units.
func (m *Meter) measure(ctx context.Context, op string, params any, next func() (any, error)) (any, error) {
	switch in := params.(type) {
	case *dynamodb.PutItemInput:
		return m.measureWrite(ctx, op, *in.TableName, in.Item, func(t *tableDef, _ item) item { return in.Item }, next)
	case *dynamodb.UpdateItemInput:
		return m.measureWrite(ctx, op, *in.TableName, in.Key, func(t *tableDef, key item) item {
			after, err := m.get(ctx, *in.TableName, key)
			if err != nil {
				m.fail(fmt.Errorf("reading %v after UpdateItem: %w", key, err))
			}
			return after
		}, next)
	case *dynamodb.DeleteItemInput:
		return m.measureWrite(ctx, op, *in.TableName, in.Key, func(*tableDef, item) item { return nil }, next)
	case *dynamodb.GetItemInput:
		out, err := next()
		if err == nil {
			t, terr := m.table(ctx, *in.TableName)
			if terr != nil {
				m.fail(terr)
				return out, err
			}
			res := out.(*dynamodb.GetItemOutput)
			m.record(op, t.kindOf(in.Key), Units{Calls: 1, RU: readUnits(Size(res.Item), in.ConsistentRead != nil && *in.ConsistentRead)})
		}
		return out, err
	case *dynamodb.QueryInput:
		out, err := next()
		if err == nil {
			t, terr := m.table(ctx, *in.TableName)
			if terr != nil {
				m.fail(terr)
				return out, err
			}
			res := out.(*dynamodb.QueryOutput)
			size, kind := 0, "query"
			for _, it := range res.Items {
				size += Size(it)
				kind = t.kindOf(t.keyOf(it))
			}
			if res.ScannedCount > res.Count && res.Count > 0 {
				size = size * int(res.ScannedCount) / int(res.Count) // a filter: billed on what was read
			}
			if in.IndexName != nil {
				kind = "query " + *in.IndexName + " " + kind
			} else {
				kind = "query " + kind
			}
			m.record(op, kind, Units{Calls: 1, RU: readUnits(size, in.ConsistentRead != nil && *in.ConsistentRead)})
		}
		return out, err
	case *dynamodb.BatchGetItemInput:
		out, err := next()
		if err == nil {
			res := out.(*dynamodb.BatchGetItemOutput)
			u := Units{Calls: 1}
			for name, its := range res.Responses {
				consistent := false
				if ka, ok := in.RequestItems[name]; ok && ka.ConsistentRead != nil {
					consistent = *ka.ConsistentRead
				}
				for _, it := range its {
					u.RU += readUnits(Size(it), consistent)
				}
			}
			m.record(op, "batch get", u)
		}
		return out, err
	case *dynamodb.BatchWriteItemInput, *dynamodb.TransactWriteItemsInput, *dynamodb.TransactGetItemsInput,
		*dynamodb.ScanInput, *dynamodb.ExecuteStatementInput:
		m.fail(fmt.Errorf("the meter does not price %s", op))
	}
	return next()
}

func (m *Meter) measureWrite(ctx context.Context, op, table string, keyOrItem item, after func(*tableDef, item) item, next func() (any, error)) (any, error) {
	t, err := m.table(ctx, table)
	if err != nil {
		m.fail(err)
		return next()
	}
	key := t.keyOf(keyOrItem)
	before, err := m.get(ctx, table, key)
	if err != nil {
		m.fail(fmt.Errorf("reading %v before %s: %w", key, op, err))
	}
	out, err := next()
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		m.record(op, t.kindOf(key), t.write(before, after(t, key), true))
	case errors.As(err, &ccf):
		intended := before
		if op == "PutItem" {
			intended = keyOrItem
		}
		m.record(op, t.kindOf(key), t.write(before, intended, false))
	}
	return out, err
}

func (m *Meter) get(ctx context.Context, table string, key item) (item, error) {
	out, err := m.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: key, ConsistentRead: new(true)})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}
