package script

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"

	"go.starlark.net/starlark"
)

// errTooLarge: the result's JSON exceeds MaxOutputBytes.
var errTooLarge = errors.New("output too large")

// maxDepth bounds the nesting of values converted to and from JSON.
const maxDepth = 1000

// decodeInput turns the run's input JSON into Starlark values (objects →
// dict, arrays → list, integers → int, other numbers → float). Empty input
// is None. The values are frozen: every evaluation sees the same input.
func decodeInput(raw json.RawMessage) (starlark.Value, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return starlark.None, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decoding input: %w", err)
	}
	sv, err := fromGo(v, 0)
	if err != nil {
		return nil, fmt.Errorf("decoding input: %w", err)
	}
	sv.Freeze()
	return sv, nil
}

func fromGo(v any, depth int) (starlark.Value, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested more than %d deep", maxDepth)
	}
	switch v := v.(type) {
	case nil:
		return starlark.None, nil
	case bool:
		return starlark.Bool(v), nil
	case string:
		return starlark.String(v), nil
	case json.Number:
		if i, ok := new(big.Int).SetString(v.String(), 10); ok {
			return starlark.MakeBigInt(i), nil
		}
		f, err := strconv.ParseFloat(v.String(), 64)
		if err != nil {
			return nil, fmt.Errorf("number %s: %w", v, err)
		}
		return starlark.Float(f), nil
	case []any:
		elems := make([]starlark.Value, len(v))
		for i, e := range v {
			sv, err := fromGo(e, depth+1)
			if err != nil {
				return nil, err
			}
			elems[i] = sv
		}
		return starlark.NewList(elems), nil
	case map[string]any:
		d := starlark.NewDict(len(v))
		for _, k := range sortedKeys(v) {
			sv, err := fromGo(v[k], depth+1)
			if err != nil {
				return nil, err
			}
			if err := d.SetKey(starlark.String(k), sv); err != nil {
				return nil, err
			}
		}
		return d, nil
	}
	return nil, fmt.Errorf("unexpected JSON value %T", v)
}

// encodeResult converts the script's result to JSON: None, bool, int,
// float, str, list, tuple, dict with string keys, and node results (as
// {"ok","output","error","node"}). Anything else is an error naming the
// type; output past limit bytes is errTooLarge. Dict keys keep the
// script's insertion order, so the bytes are deterministic.
func encodeResult(v starlark.Value, limit int) (json.RawMessage, error) {
	e := encoder{limit: limit}
	if err := e.value(v, 0); err != nil {
		return nil, err
	}
	return json.RawMessage(e.buf.Bytes()), nil
}

type encoder struct {
	buf   bytes.Buffer
	limit int
}

func (e *encoder) write(b []byte) error {
	if e.buf.Len()+len(b) > e.limit {
		return errTooLarge
	}
	e.buf.Write(b)
	return nil
}

func (e *encoder) str(s string) error {
	if e.buf.Len()+len(s) > e.limit { // before allocating its encoding
		return errTooLarge
	}
	b, _ := json.Marshal(s) // never fails for a string
	return e.write(b)
}

func (e *encoder) value(v starlark.Value, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("result is nested more than %d deep", maxDepth)
	}
	switch v := v.(type) {
	case starlark.NoneType:
		return e.write([]byte("null"))
	case starlark.Bool:
		return e.write([]byte(strconv.FormatBool(bool(v))))
	case starlark.Int:
		return e.write([]byte(v.String()))
	case starlark.Float:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("result contains %s, which JSON cannot represent", v)
		}
		b, _ := json.Marshal(f)
		return e.write(b)
	case starlark.String:
		return e.str(string(v))
	case *starlark.List:
		return e.array(v, v.Len(), depth)
	case starlark.Tuple:
		return e.array(v, v.Len(), depth)
	case *starlark.Dict:
		return e.dict(v, depth)
	case Result:
		return e.result(v)
	case Handle:
		return fmt.Errorf("result contains %s: wait() for a handle to get its result", v)
	}
	return fmt.Errorf("result contains a %s, which is not JSON (use None, bool, int, float, str, list, tuple, dict or a node result)", v.Type())
}

func (e *encoder) array(seq starlark.Indexable, n, depth int) error {
	if err := e.write([]byte("[")); err != nil {
		return err
	}
	for i := range n {
		if i > 0 {
			if err := e.write([]byte(",")); err != nil {
				return err
			}
		}
		if err := e.value(seq.Index(i), depth+1); err != nil {
			return err
		}
	}
	return e.write([]byte("]"))
}

func (e *encoder) dict(d *starlark.Dict, depth int) error {
	if err := e.write([]byte("{")); err != nil {
		return err
	}
	for i, kv := range d.Items() {
		k, ok := kv[0].(starlark.String)
		if !ok {
			return fmt.Errorf("result contains a dict with a %s key; JSON object keys must be strings", kv[0].Type())
		}
		if i > 0 {
			if err := e.write([]byte(",")); err != nil {
				return err
			}
		}
		if err := e.str(string(k)); err != nil {
			return err
		}
		if err := e.write([]byte(":")); err != nil {
			return err
		}
		if err := e.value(kv[1], depth+1); err != nil {
			return err
		}
	}
	return e.write([]byte("}"))
}

func (e *encoder) result(r Result) error {
	b, err := json.Marshal(struct {
		OK     bool   `json:"ok"`
		Output string `json:"output"`
		Error  string `json:"error"`
		Node   string `json:"node"`
	}{r.res.OK, r.res.Output, r.res.Error, r.node})
	if err != nil {
		return err
	}
	return e.write(b)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
