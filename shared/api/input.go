package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Bounds on what a request may carry besides its body.
const (
	MaxPathSegment   = 512  // bytes of one path segment (ids are far shorter)
	MaxQueryValue    = 1024 // bytes of one query parameter
	MaxHeaderValue   = 256  // bytes of the Idempotency-Key header
	maxReportedBytes = 60   // of a bad value quoted in an error message
)

// checkBody refuses what encoding/json would quietly accept or alter: a
// body that is not a JSON object (null, an array, a string…), invalid UTF-8
// or a lone UTF-16 surrogate in any string (json replaces them with
// U+FFFD), and null where the field's type is an object, a list, a string
// or a number (json treats it as "absent"). body is one valid JSON value
// already decoded into v.
func checkBody(body []byte, v any) error {
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) == 0 || b[0] != '{' {
		return fmt.Errorf("request body must be a JSON object: %w", contracts.ErrInvalid)
	}
	if err := checkStrings(body); err != nil {
		return err
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		return fmt.Errorf("request body: %v: %w", err, contracts.ErrInvalid)
	}
	return checkNulls(tree, reflect.TypeOf(v), "")
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

// checkNulls walks the decoded JSON beside the Go type it was decoded
// into and refuses null wherever the type is not a pointer, an interface or
// raw JSON.
func checkNulls(v any, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		if v == nil {
			return nil // a pointer field: null is "unset"
		}
		t = t.Elem()
	}
	if t == rawMessage || t.Kind() == reflect.Interface {
		return nil // any JSON value, null included
	}
	if v == nil {
		return fmt.Errorf("field %q: null is not a value here (leave the field out instead): %w", fieldName(path), contracts.ErrInvalid)
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, _ := v.(map[string]any)
		for i := range t.NumField() {
			sf := t.Field(i)
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if name == "-" || !sf.IsExported() {
				continue
			}
			if sf.Anonymous && name == "" {
				if err := checkNulls(v, sf.Type, path); err != nil {
					return err
				}
				continue
			}
			if name == "" {
				name = sf.Name
			}
			for k, fv := range obj { // encoding/json matches names case-insensitively
				if strings.EqualFold(k, name) {
					if err := checkNulls(fv, sf.Type, join(path, k)); err != nil {
						return err
					}
				}
			}
		}
	case reflect.Slice, reflect.Array:
		list, _ := v.([]any)
		for i, ev := range list {
			if err := checkNulls(ev, t.Elem(), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case reflect.Map:
		obj, _ := v.(map[string]any)
		for k, ev := range obj {
			if err := checkNulls(ev, t.Elem(), join(path, k)); err != nil {
				return err
			}
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func fieldName(path string) string {
	if path == "" {
		return "(the body)"
	}
	return path
}

// checkStrings scans the raw bytes of a valid JSON text for a string (key
// or value) that is not valid UTF-8 or escapes a lone UTF-16 surrogate, and
// names the field it is in.
func checkStrings(b []byte) error {
	type frame struct {
		object bool
		key    string
		index  int
	}
	var stack []frame
	path := func(depth int) string { // the field named by the first depth frames
		var sb strings.Builder
		for _, f := range stack[:depth] {
			if f.object {
				if sb.Len() > 0 {
					sb.WriteByte('.')
				}
				sb.WriteString(f.key)
			} else {
				fmt.Fprintf(&sb, "[%d]", f.index)
			}
		}
		return sb.String()
	}
	expectKey := false
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{':
			stack = append(stack, frame{object: true})
			expectKey = true
		case '[':
			stack = append(stack, frame{})
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ',':
			if n := len(stack); n > 0 {
				if stack[n-1].object {
					expectKey = true
				} else {
					stack[n-1].index++
				}
			}
		case ':':
			expectKey = false
		case '"':
			end, bad := scanString(b, i+1)
			if bad != "" {
				if expectKey && len(stack) > 0 {
					return fmt.Errorf("field %q has a key that %s: %w", fieldName(path(len(stack)-1)), bad, contracts.ErrInvalid)
				}
				return fmt.Errorf("field %q %s: %w", fieldName(path(len(stack))), bad, contracts.ErrInvalid)
			}
			if expectKey && len(stack) > 0 {
				stack[len(stack)-1].key = string(b[i+1 : end])
			}
			i = end
		}
	}
	return nil
}

// scanString reads the JSON string whose contents start at b[i] and
// returns the index of its closing quote, and what is wrong with it ("" if
// nothing).
func scanString(b []byte, i int) (int, string) {
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			return i, ""
		case c == '\\':
			if i+1 < len(b) && b[i+1] == 'u' {
				r := hex4(b, i+2)
				switch {
				case r >= 0xD800 && r < 0xDC00:
					if i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
						if lo := hex4(b, i+8); lo >= 0xDC00 && lo < 0xE000 {
							i += 12
							continue
						}
					}
					return i, "escapes a lone UTF-16 surrogate (not a character)"
				case r >= 0xDC00 && r < 0xE000:
					return i, "escapes a lone UTF-16 surrogate (not a character)"
				}
				i += 6
				continue
			}
			i += 2
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return i, "is not valid UTF-8"
			}
			i += n
		}
	}
	return i, ""
}

// hex4 reads four hex digits at b[i:], or -1.
func hex4(b []byte, i int) int {
	if i+4 > len(b) {
		return -1
	}
	n, err := strconv.ParseUint(string(b[i:i+4]), 16, 32)
	if err != nil {
		return -1
	}
	return int(n)
}

// guard refuses, before any route runs, a path or query that no route can
// serve: invalid UTF-8, a path segment or query value over its bound (a
// store would fail on such a key with an error of its own).
func guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, seg := range strings.Split(r.URL.Path, "/") {
			if !utf8.ValidString(seg) || len(seg) > MaxPathSegment {
				writeError(w, http.StatusNotFound, "not_found", "no such resource (a path segment that is not valid UTF-8 or longer than "+strconv.Itoa(MaxPathSegment)+" bytes)")
				return
			}
		}
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request", "query string: "+err.Error())
			return
		}
		for k, vs := range q {
			for _, v := range vs {
				if !utf8.ValidString(k) || !utf8.ValidString(v) {
					writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("query parameter %q is not valid UTF-8", quoteClip(k)))
					return
				}
				if len(v) > MaxQueryValue || len(k) > MaxQueryValue {
					writeError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("query parameter %q is longer than %d bytes", quoteClip(k), MaxQueryValue))
					return
				}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// idempotencyKey reads the Idempotency-Key header: at most MaxHeaderValue
// bytes of printable UTF-8.
func idempotencyKey(r *http.Request) (string, error) {
	k := r.Header.Get("Idempotency-Key")
	if len(k) > MaxHeaderValue {
		return "", fmt.Errorf("Idempotency-Key is longer than %d bytes: %w", MaxHeaderValue, contracts.ErrInvalid)
	}
	if !utf8.ValidString(k) || strings.ContainsFunc(k, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", fmt.Errorf("Idempotency-Key is not printable UTF-8: %w", contracts.ErrInvalid)
	}
	return k, nil
}

func quoteClip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > maxReportedBytes {
		s = clipText(s, maxReportedBytes)
	}
	return s
}

// checkLen refuses a string field over max bytes (ErrTooLarge).
func checkLen(name, s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("%s is %d bytes, limit %d: %w", name, len(s), max, contracts.ErrTooLarge)
	}
	return nil
}
