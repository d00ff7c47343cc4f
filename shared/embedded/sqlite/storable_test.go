package sqlite

import (
	stdjson "encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Every time and raw JSON value a hot record can hold, set to what
// encoding/json refuses to write (a year outside 0–9999, a raw value with
// trailing data), is refused by the store's codec too — found by walking
// the record types, so a field added later is covered.
func TestStorableRefusesWhatEncodingJSONRefuses(t *testing.T) {
	bad := map[reflect.Type][]reflect.Value{
		timeType: {reflect.ValueOf(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)), reflect.ValueOf(time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC))},
		rawType:  {reflect.ValueOf(stdjson.RawMessage(`{"a":1} {"b":2}`)), reflect.ValueOf(stdjson.RawMessage(`{"a":`))},
	}
	good := map[reflect.Type]reflect.Value{
		timeType: reflect.ValueOf(time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)),
		rawType:  reflect.ValueOf(stdjson.RawMessage(` {"a": [1, 2]} `)),
	}
	leaves := 0
	for _, v := range []any{contracts.Session{}, contracts.Submission{}, contracts.Node{}, contracts.Event{}, contracts.Message{},
		contracts.ModelEvent{}, contracts.ModelResponse{}, contracts.ToolResult{}} {
		typ := reflect.TypeOf(v)
		for _, path := range leafPaths(typ, nil) {
			leaves++
			leaf := path[len(path)-1].Type
			for _, b := range bad[leaf] {
				rec := reflect.New(typ).Elem()
				set(rec, path, b)
				if _, err := stdjson.Marshal(rec.Interface()); err == nil {
					t.Fatalf("%s %s = %v: encoding/json writes it (the test's bad value is not bad)", typ, names(path), b)
				}
				if _, err := jsonc.Marshal(rec.Interface()); !errors.Is(err, contracts.ErrInvalid) {
					t.Errorf("%s %s = %v: the store's codec: %v, want ErrInvalid", typ, names(path), b, err)
				}
			}
			rec := reflect.New(typ).Elem()
			set(rec, path, good[leaf])
			if _, err := jsonc.Marshal(rec.Interface()); err != nil {
				t.Errorf("%s %s = %v: refused: %v", typ, names(path), good[leaf], err)
			}
		}
	}
	if leaves < 20 {
		t.Fatalf("%d time and raw fields found in the hot records: the walk is broken", leaves)
	}
}

// leafPaths lists the paths of fields from t to each time or raw JSON
// value in it (through pointers, slices and maps: their elements).
func leafPaths(t reflect.Type, path []reflect.StructField) [][]reflect.StructField {
	if t == timeType || t == rawType {
		return [][]reflect.StructField{append([]reflect.StructField(nil), path...)}
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return leafPaths(t.Elem(), path)
	case reflect.Struct:
		var out [][]reflect.StructField
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			out = append(out, leafPaths(f.Type, append(path, f))...)
		}
		return out
	}
	return nil
}

// set stores leaf at path in v, making the pointers, slices and maps on
// the way (one element each).
func set(v reflect.Value, path []reflect.StructField, leaf reflect.Value) {
	for {
		switch v.Kind() {
		case reflect.Pointer:
			v.Set(reflect.New(v.Type().Elem()))
			v = v.Elem()
			continue
		case reflect.Slice:
			if v.Type() != rawType {
				v.Set(reflect.MakeSlice(v.Type(), 1, 1))
				v = v.Index(0)
				continue
			}
		case reflect.Map:
			m := reflect.MakeMap(v.Type())
			elem := reflect.New(v.Type().Elem()).Elem()
			set(elem, path, leaf)
			m.SetMapIndex(reflect.Zero(v.Type().Key()), elem)
			v.Set(m)
			return
		}
		if len(path) == 0 {
			v.Set(leaf)
			return
		}
		v = v.FieldByIndex(path[0].Index)
		path = path[1:]
	}
}

func names(path []reflect.StructField) string {
	s := ""
	for _, f := range path {
		s += "." + f.Name
	}
	return s
}
