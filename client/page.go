package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/url"
	"strconv"
)

// Page is one page of a list route: its items and the cursor of the next
// page (NextCursor "" on the last page).
type Page[T any] struct {
	Items      []T
	NextCursor string
}

// ListOptions pages a list route: Limit items (1-100; 0 = the route's
// default) after Cursor (a previous page's NextCursor; "" = the first
// page).
type ListOptions struct {
	Limit  int
	Cursor string
}

func (o ListOptions) query() url.Values {
	q := url.Values{}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	return q
}

// list makes r, a list route answering {name: [...], next_cursor}.
func list[T any](ctx context.Context, c *Client, r request, name string) (Page[T], error) {
	var raw map[string]json.RawMessage
	if err := c.call(ctx, r, &raw); err != nil {
		return Page[T]{}, err
	}
	var p Page[T]
	if err := json.Unmarshal(raw[name], &p.Items); err != nil {
		return Page[T]{}, fmt.Errorf("%s: decoding %s: %w", r.describe(), name, err)
	}
	if next, ok := raw["next_cursor"]; ok {
		if err := json.Unmarshal(next, &p.NextCursor); err != nil {
			return Page[T]{}, fmt.Errorf("%s: decoding next_cursor: %w", r.describe(), err)
		}
	}
	return p, nil
}

// All yields every item of a list, page after page: page is called with
// "" and then with each page's NextCursor until one is the last. An error
// is yielded once, and ends the list.
//
//	for s, err := range client.All(func(cur string) (client.Page[client.SessionSummary], error) {
//		return c.Sessions(ctx, client.ListOptions{Limit: 100, Cursor: cur})
//	}) { … }
func All[T any](page func(cursor string) (Page[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for cursor := ""; ; {
			p, err := page(cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range p.Items {
				if !yield(it, nil) {
					return
				}
			}
			if p.NextCursor == "" || p.NextCursor == cursor {
				return
			}
			cursor = p.NextCursor
		}
	}
}
