package api

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/cairnrun/cairn/shared/contracts"
)

// Pagination. Every list route takes ?limit= (1…MaxPageLimit, default
// DefaultPageLimit) and ?cursor= (opaque: the next_cursor of the previous
// page) and answers {<items>, next_cursor} — next_cursor is "" on the last
// page. A page also ends early once its items would pass MaxPageBytes, so
// that no response exceeds what the api Lambda may return (6 MB, counted
// after its JSON envelope escapes the body once more). Big fields (prompts,
// results, scripts) are summarised in lists and read one by one.
const (
	DefaultPageLimit = 20
	MaxPageLimit     = 100
	MaxPageBytes     = 4 << 20
	PreviewBytes     = 200 // of a prompt or result in a summary
)

// cursor is a position in a list: after the item keyed After, which was
// the Offset-th (counting from 1) when the cursor was issued.
type cursor struct {
	After  string `json:"a"`
	Offset int    `json:"o"`
}

type pageReq struct {
	limit int
	cursor
}

// pageParams reads ?limit= (default DefaultPageLimit) and ?cursor=.
func pageParams(q url.Values) (pageReq, error) { return pageParamsOr(q, DefaultPageLimit) }

func pageParamsOr(q url.Values, def int) (pageReq, error) {
	p := pageReq{limit: def}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxPageLimit {
			return p, fmt.Errorf("limit=%q: want a whole number 1-%d: %w", quoteClip(s), MaxPageLimit, contracts.ErrInvalid)
		}
		p.limit = n
	}
	if s := q.Get("cursor"); s != "" {
		raw, err := base64.RawURLEncoding.DecodeString(s)
		if err == nil {
			err = json.Unmarshal(raw, &p.cursor)
		}
		if err != nil || p.Offset < 1 || p.Offset > 1<<30 || p.After == "" || !utf8.ValidString(p.After) {
			return p, fmt.Errorf("cursor=%q: not a cursor this API issued: %w", quoteClip(s), contracts.ErrInvalid)
		}
	}
	return p, nil
}

func (c cursor) String() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// window returns the items after p's cursor, at most p.limit, how many
// items precede them and whether more follow, from a store that can only
// answer "the first n in your order" (fetch). The cursor's key is looked
// up in what fetch returns, so items added before it since (a newest-first
// list) neither repeat nor shift the page; a key no longer there falls
// back to the offset.
func window[T any](p pageReq, key func(T) string, fetch func(n int) ([]T, error)) ([]T, int, bool, error) {
	n := p.Offset + p.limit + 1
	for {
		all, err := fetch(n)
		if err != nil {
			return nil, 0, false, err
		}
		start := 0
		if p.After != "" {
			start = min(p.Offset, len(all))
			for i, it := range all {
				if key(it) == p.After {
					start = i + 1
					break
				}
			}
		}
		rest := all[start:]
		if len(rest) > p.limit {
			return rest[:p.limit], start, true, nil
		}
		if len(all) < n || n > 1<<20 { // the store has no more
			return rest, start, false, nil
		}
		n *= 2 // items were added before the cursor: look further
	}
}

// fit returns how many of items, from the first, fit in budget bytes as
// the API encodes them (at least one, so a page always moves on).
func fit[T any](items []T, budget int) int {
	used := 0
	for i, it := range items {
		used += encodedSize(it) + 1
		if used > budget && i > 0 {
			return i
		}
	}
	return len(items)
}

// encodedSize is the size of v's JSON once the Lambda envelope escapes it
// as a string: each quote and backslash doubles.
func encodedSize(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	n := len(b)
	for _, c := range b {
		if c == '"' || c == '\\' {
			n++
		}
	}
	return n
}

// listPage is a list answer: the items under their name and the cursor of
// the next page ("" when this is the last).
func listPage[T any](name string, items []T, next string) map[string]any {
	if items == nil {
		items = []T{}
	}
	return map[string]any{name: items, "next_cursor": next}
}

// page cuts a window (pos items precede it) to the byte budget and returns
// the items and the next cursor.
func page[T any](items []T, pos int, more bool, key func(T) string, budget int) ([]T, string) {
	k := fit(items, budget)
	if k < len(items) {
		more = true
	}
	items = items[:k]
	if !more || k == 0 {
		return items, ""
	}
	return items, cursor{After: key(items[k-1]), Offset: pos + k}.String()
}

// fromSlice is a window fetch over a list already in memory.
func fromSlice[T any](all []T) func(int) ([]T, error) {
	return func(n int) ([]T, error) { return all[:min(n, len(all))], nil }
}

// clipText returns s cut to at most n bytes on a rune boundary, with "…"
// when it was cut.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
