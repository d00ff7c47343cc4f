package sqlite

import (
	stdjson "encoding/json"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	segjson "github.com/segmentio/encoding/json"
)

// jsonc is the codec of the store's hot records — sessions, submissions,
// nodes, events, queue messages, stream chunks and completions, tool
// results: github.com/segmentio/encoding/json, which reads and writes what
// encoding/json does (TestCodecIsEncodingJSON) at a quarter of its cost
// (JSON was a tenth of a turn's CPU). Where it would write what
// encoding/json refuses, Marshal refuses too (storable): a time outside
// the years 0–9999, which neither reads back, and a json.RawMessage that
// is not one JSON value, which it would cut to its first. One difference
// is left, harmless to a read: it writes a field tagged omitzero out when
// it is zero, where encoding/json leaves it out (a zero time is read back
// zero — in the zone it was written in, if it had one). Workflow records
// (workflow*.go, off the hot path, their results any values) keep
// encoding/json.
var jsonc = struct {
	Marshal   func(any) ([]byte, error)
	Unmarshal func([]byte, any) error
}{
	Marshal: func(v any) ([]byte, error) {
		if err := storable(v); err != nil {
			return nil, err
		}
		return segjson.Marshal(v)
	},
	Unmarshal: segjson.Unmarshal,
}

// storable refuses v if a time or a raw JSON value in it is one that
// encoding/json would not write. It visits only the fields that lead to
// one (a plan per type, built once).
func storable(v any) error {
	if v == nil {
		return nil
	}
	rv := reflect.ValueOf(v)
	if c := checkerOf(rv.Type()); c != nil {
		return c(rv)
	}
	return nil
}

type checker func(reflect.Value) error

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[stdjson.RawMessage]()
	checkers sync.Map // reflect.Type → checker (nil: nothing in it to check)
)

func checkerOf(t reflect.Type) checker {
	if c, ok := checkers.Load(t); ok {
		return c.(checker)
	}
	c := build(t, map[reflect.Type]*checker{})
	checkers.Store(t, c)
	return c
}

// build makes t's checker; building holds the types being built, for a
// type that contains itself.
func build(t reflect.Type, building map[reflect.Type]*checker) checker {
	switch {
	case t == timeType:
		return func(v reflect.Value) error {
			if y := v.Interface().(time.Time).Year(); y < 0 || y > 9999 {
				return fmt.Errorf("a time in year %d: JSON holds years 0–9999: %w", y, contracts.ErrInvalid)
			}
			return nil
		}
	case t == rawType:
		return func(v reflect.Value) error {
			if raw := v.Bytes(); len(raw) > 0 && !stdjson.Valid(raw) { // empty: as encoding/json, the codec refuses it (or omits it, omitempty)
				return fmt.Errorf("a raw JSON value that is not one JSON value (%d bytes): %w", len(raw), contracts.ErrInvalid)
			}
			return nil
		}
	}
	if p, ok := building[t]; ok {
		return func(v reflect.Value) error { return (*p)(v) }
	}
	var self checker
	building[t] = &self
	defer delete(building, t)
	switch t.Kind() {
	case reflect.Pointer:
		elem := build(t.Elem(), building)
		if elem == nil {
			return nil
		}
		self = func(v reflect.Value) error {
			if v.IsNil() {
				return nil
			}
			return elem(v.Elem())
		}
	case reflect.Slice, reflect.Array:
		elem := build(t.Elem(), building)
		if elem == nil {
			return nil
		}
		self = func(v reflect.Value) error {
			for i := range v.Len() {
				if err := elem(v.Index(i)); err != nil {
					return err
				}
			}
			return nil
		}
	case reflect.Map:
		elem := build(t.Elem(), building)
		if elem == nil {
			return nil
		}
		self = func(v reflect.Value) error {
			for it := v.MapRange(); it.Next(); {
				if err := elem(it.Value()); err != nil {
					return err
				}
			}
			return nil
		}
	case reflect.Interface:
		self = func(v reflect.Value) error {
			if v.IsNil() {
				return nil
			}
			if c := checkerOf(v.Elem().Type()); c != nil {
				return c(v.Elem())
			}
			return nil
		}
	case reflect.Struct:
		type field struct {
			i int
			c checker
		}
		var fields []field
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			if c := build(f.Type, building); c != nil {
				fields = append(fields, field{i, c})
			}
		}
		if len(fields) == 0 {
			return nil
		}
		self = func(v reflect.Value) error {
			for _, f := range fields {
				if err := f.c(v.Field(f.i)); err != nil {
					return err
				}
			}
			return nil
		}
	default:
		return nil
	}
	return self
}
