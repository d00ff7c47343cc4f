package schedule_test

import (
	"errors"
	"testing"
	"time"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/workflow/schedule"
)

// FuzzParse: Parse never panics, refuses with an error wrapping
// contracts.ErrInvalid, and an accepted expression re-parses to itself and
// evaluates sanely — every firing strictly after the time asked, cron on
// whole UTC minutes with no firing skipped, rate on anchor + k·N.
//
//	go test -run '^$' -fuzz FuzzParse -fuzztime 60s ./shared/workflow/schedule/
//
// The seed corpus (testdata/fuzz/FuzzParse) holds the overflowing step
// that once panicked with an index out of range.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"rate(1 minute)", "rate(5 minutes)", "rate(1 day)", "rate(106751 days)", "rate(9223372036854775807 minutes)",
		"cron(0 12 * * ? *)", "cron(*/15 * * * ? *)", "cron(0 9 ? * MON-FRI *)", "cron(0 0 30 2 ? *)",
		"cron(1/9223372036854775807 * * * ? *)", "cron(0 0 1 1 ? 2199)", "cron(59 23 31 12 ? 1970-2199/229)",
		"cron(0-59/7 0-23/5 1-31/3 JAN-DEC/2 ? 2024-2030)", "cron(0 12 L * ? *)", "at(2024-01-01T00:00:00)",
	} {
		f.Add(s)
	}
	anchor := time.Date(2025, 3, 1, 10, 7, 13, 500, time.UTC)
	afters := []time.Time{
		time.Unix(0, 0).UTC(),
		time.Date(2025, 3, 1, 10, 7, 13, 500, time.UTC),
		time.Date(2028, 2, 29, 23, 59, 59, 0, time.UTC),
		time.Date(2199, 12, 31, 23, 58, 0, 0, time.UTC),
	}
	f.Fuzz(func(t *testing.T, expr string) {
		e, err := schedule.Parse(expr)
		if err != nil {
			if !errors.Is(err, contracts.ErrInvalid) {
				t.Fatalf("Parse(%q): error does not wrap ErrInvalid: %v", expr, err)
			}
			return
		}
		again, err := schedule.Parse(e.String())
		if err != nil || again.String() != e.String() {
			t.Fatalf("Parse(%q) = %q, which re-parses to %q, %v", expr, e.String(), again.String(), err)
		}
		p, isRate := e.Rate()
		if q, ok := again.Rate(); q != p || ok != isRate {
			t.Fatalf("%q: rate %v/%v, re-parsed %v/%v", expr, p, isRate, q, ok)
		}
		if isRate && (p < time.Minute || p%time.Minute != 0) {
			t.Fatalf("%q: rate %v is not whole minutes ≥ 1", expr, p)
		}
		for _, after := range afters {
			next := e.Next(anchor, after)
			if next.IsZero() {
				if isRate {
					t.Fatalf("%q: a rate always fires again, got none after %v", expr, after)
				}
				continue
			}
			if !next.After(after) || next.Location() != time.UTC {
				t.Fatalf("%q: Next(%v) = %v, want a UTC time after it", expr, after, next)
			}
			if got := again.Next(anchor, after); !got.Equal(next) {
				t.Fatalf("%q: Next(%v) = %v, re-parsed %v", expr, after, next, got)
			}
			if isRate {
				from := after
				if from.Before(anchor) {
					from = anchor // the first firing is one period after the anchor
				}
				if d := next.Sub(anchor); d <= 0 || d%p != 0 || next.Sub(from) > p {
					t.Fatalf("%q: Next(%v) = %v is not the first anchor + k·%v", expr, after, next, p)
				}
				continue
			}
			if next.Truncate(time.Minute) != next || next.Year() > 2199 {
				t.Fatalf("%q: Next(%v) = %v, want a whole minute up to 2199", expr, after, next)
			}
			if prev := next.Add(-time.Minute); !prev.Before(after) {
				if got := e.Next(anchor, prev); !got.Equal(next) {
					t.Fatalf("%q: Next(%v) = %v but Next(%v) = %v: a firing skipped", expr, after, next, prev, got)
				}
			}
			if then := e.Next(anchor, next); !then.IsZero() && !then.After(next) {
				t.Fatalf("%q: Next(%v) = %v, not after it", expr, next, then)
			}
		}
	})
}
