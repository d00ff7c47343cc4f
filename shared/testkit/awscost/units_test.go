package awscost

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func TestWriteUnits(t *testing.T) {
	tab := &tableDef{hash: "pk", rng: "sk", indexes: []indexDef{
		{name: "gsi1", hash: "gsi1pk", rng: "gsi1sk", global: true, projection: types.ProjectionTypeAll},
		{name: "lsi1", hash: "pk", rng: "lsk", projection: types.ProjectionTypeAll},
	}}
	small := item{"pk": s("P"), "sk": s("S"), "body": s("x")}
	big := item{"pk": s("P"), "sk": s("S"), "body": s(strings.Repeat("x", 2500))}
	indexed := func(it item, gsk, lsk string) item {
		out := item{}
		for k, v := range it {
			out[k] = v
		}
		out["gsi1pk"], out["gsi1sk"], out["lsk"] = s("G"), s(gsk), s(lsk)
		return out
	}
	for _, c := range []struct {
		name                 string
		old, new             item
		ok                   bool
		table, gsi, lsi, all float64
	}{
		{"new small item", nil, small, true, 1, 0, 0, 1},
		{"new 2.5 KB item", nil, big, true, 3, 0, 0, 3},
		{"shrinking: the larger size", big, small, true, 3, 0, 0, 3},
		{"into both indexes", nil, indexed(small, "a", "a"), true, 1, 1, 1, 3},
		{"keys unchanged, body changed", indexed(small, "a", "a"), indexed(big, "a", "a"), true, 3, 3, 3, 9},
		{"GSI key moves: delete + put (and the LSI entry, ALL, holds gsi1sk)", indexed(small, "a", "a"), indexed(small, "b", "a"), true, 1, 2, 1, 4},
		{"out of the indexes", indexed(small, "a", "a"), small, true, 1, 1, 1, 3},
		{"condition failed: the table only", indexed(small, "a", "a"), indexed(big, "b", "b"), false, 3, 0, 0, 3},
	} {
		u := tab.write(c.old, c.new, c.ok)
		if u.TableWU != c.table || u.GSIWU != c.gsi || u.LSIWU != c.lsi || u.WU() != c.all {
			t.Errorf("%s: table %v gsi %v lsi %v, want %v %v %v", c.name, u.TableWU, u.GSIWU, u.LSIWU, c.table, c.gsi, c.lsi)
		}
	}
}

func TestSizeAndReads(t *testing.T) {
	it := item{"ab": s("xyz"), "n": &types.AttributeValueMemberN{Value: "12345"}, "b": &types.AttributeValueMemberBOOL{Value: true}}
	if got, want := Size(it), 2+3+1+4+1+1; got != want {
		t.Errorf("Size = %d, want %d", got, want)
	}
	if got := readUnits(4097, true); got != 2 {
		t.Errorf("readUnits(4097, consistent) = %v, want 2", got)
	}
	if got := readUnits(10, false); got != 0.5 {
		t.Errorf("readUnits(10, eventual) = %v, want 0.5", got)
	}
}
